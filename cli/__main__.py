"""``python -m loopgraphs.cli``: the ``loopgraphs`` command."""

import sys

from loopgraphs.cli.commands import main

sys.exit(main())
