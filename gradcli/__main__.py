import sys

from gradcli.fastcli import main

sys.exit(main())
