from repo_sandbox.cli import main

raise SystemExit(main())
