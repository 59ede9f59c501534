from gradcli.cli import main
import sys
sys.exit(main())
