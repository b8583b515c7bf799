import sys

from kvwatch.app.cli import main

sys.exit(main())
