"""git in the command policy: the rule for git command lines (`rule`), its sub-commands (`commands`),
revisions and refs (`revs`, `refs`), and gitignore rules with git's semantics (`ignore`)."""
