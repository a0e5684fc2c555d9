from generator.cli import main

raise SystemExit(main())
