"""Table 7: switch types (learned ratio switch, hardcoded), Scratch and Adaptive; Figures 16 and 17.

One MLflow parent run (experiment lq-table7) with a child run per configuration and seed; the table as
Markdown and CSV and the learning curves as PNG on the parent. Options as `lq experiment run`:

    python experiments/table7.py --profile tiny --seeds 0 1 2
"""

import sys

from lq.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["experiment", "run", "table7", *sys.argv[1:]]))
