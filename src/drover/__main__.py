from drover.cli.main import main

raise SystemExit(main())
