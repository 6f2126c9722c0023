"""What the tools know about the repository tree between calls: directory watches, the tree index, file facts.

Everything here is a cache of the policy walk (`fs.walk`) that is reused only while provably unchanged.
"""
