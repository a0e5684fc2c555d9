import sys

from capture.bytecode import cache_bytecode

cache_bytecode()  # before the imports it speeds up

from capture.cli import main  # noqa: E402

sys.exit(main())
