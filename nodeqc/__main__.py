from nodeqc.cli import main

raise SystemExit(main())
