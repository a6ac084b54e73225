"""Table 1: encoder types (RL act, speech, act & speech goals; BC act & speech goals).

One MLflow parent run (experiment lq-table1) with a child run per configuration and seed; the table as
Markdown and CSV and the learning curves as PNG on the parent. Options as `lq experiment run`:

    python experiments/table1.py --profile tiny --seeds 0 1 2
"""

import sys

from lq.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["experiment", "run", "table1", *sys.argv[1:]]))
