"""Table 2: ability types (act+speech, act only, speech only, speech only without speech goals), Scratch and Adaptive.

One MLflow parent run (experiment lq-table2) with a child run per configuration and seed; the table as
Markdown and CSV and the learning curves as PNG on the parent. Options as `lq experiment run`:

    python experiments/table2.py --profile tiny --seeds 0 1 2
"""

import sys

from lq.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["experiment", "run", "table2", *sys.argv[1:]]))
