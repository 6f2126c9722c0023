from repo_sandbox.entry import main

raise SystemExit(main())
