"""How much what is said moves the environment's partner (lq.envs.persuasion): the goals it completes on the test
quests while the agent only speaks, for a random speaker and for one that reads the goal and asks for it, with the
partner as calibrated and, with --grid, at other listening weights and acting shares (the action bias set for each
share on the training demonstrations' partner turns, as the calibration sets it). Prints a Markdown table.

    python experiments/persuasion.py outputs/bc/scratch/act_speech-hardcoded/seed-0/best.ckpt --seeds 0 1 2
    python experiments/persuasion.py outputs/bc/scratch/act_speech-hardcoded/seed-0/best.ckpt --seeds 0 --grid
"""

import argparse
import statistics

from lq.envs.calibration import acting_share, partner_turns
from lq.envs.partner import bias_for_share
from lq.envs.persuasion import SPEAKERS, partner_completions, speaker
from lq.lit.checkpoints import load_agent

GRID = ((0.5, 1), (0.5, 4), (8, 1), (8, 4), (32, 1), (32, 4))  # listening (x the spread), share (x the demos')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="an agent (BC or RL) whose environment is probed: partner, DM, data")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--grid", action="store_true", help="also other listening weights and acting shares")
    args = parser.parse_args(argv)
    agent = load_agent(args.checkpoint)
    env = agent.eval_env("test")
    partner = env.partner
    speakers = [speaker(name, env.utterance_space) for name in SPEAKERS]

    def row(label: str) -> None:
        cells = []
        for speak in speakers:
            got = [partner_completions(env, speak, seed) for seed in args.seeds]
            cells.append(f"{statistics.fmean(got):.3f} ± {statistics.pstdev(got):.3f}")
        print(f"| {label} | {len(args.seeds)} | {' | '.join(cells)} |", flush=True)

    print("| partner | seeds | random speaker | goal-reading speaker |\n| --- | ---: | ---: | ---: |")
    row(f"as calibrated (listening {partner.listen_weight:.3f}, action bias {partner.action_bias:.3f})")
    if args.grid:
        turns = partner_turns(agent.eval_env("train").instances)  # the turns and share the calibration reads
        share = acting_share(turns)
        spread = partner.action_spread([t for t in turns if t.kind == "action"])
        for listening, times in GRID:
            partner.listen_weight = listening * spread
            partner.action_bias = bias_for_share(partner.choices_at(turns)[0], times * share)
            row(f"listening {listening:g} x {spread:.3f}, acting share {times * share:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
