"""git in execute_bash: the hook the service calls for every stage (`stage`), the exclusions narrowed to
names git could show (`excludes`, `names`, `foreign`, read by `scan` into `records`), the objects a command
names (`objects`), and blame's rename sources (`blame`)."""
