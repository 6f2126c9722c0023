"""What the tools know about the repository tree between calls: the tree index and file facts.

Everything here is a cache of the policy walk (`fs.walk`) that is reused only while provably unchanged (the
directory watches and the racy-clean rule are `fs.watch`).
"""
