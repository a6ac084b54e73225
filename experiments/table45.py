"""Tables 4 and 5: supervised timeline prediction, Hits@k, per pretrained encoder; Figures 13 and 14.

One MLflow parent run (experiment lq-table45) with a child run per configuration and seed; the table as
Markdown and CSV and the learning curves as PNG on the parent. Options as `lq experiment run`:

    python experiments/table45.py --profile tiny --seeds 0 1 2
"""

import sys

from lq.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["experiment", "run", "table45", *sys.argv[1:]]))
