"""The technician build's entry point: the nodeqc command, frozen."""

import multiprocessing
import sys

from nodeqc.cli.main import main

if __name__ == "__main__":
    # The stress workers are spawned processes: in a frozen build they re-run this executable,
    # and freeze_support() turns that run into the worker.
    multiprocessing.freeze_support()
    sys.exit(main())
