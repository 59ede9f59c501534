import sys

from gradcli.cli.fast import main

sys.exit(main())
