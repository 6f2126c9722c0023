"""The file-system layer: every read of the repository goes through the jail, the beneath-walk and the policy
walker here (docs/architecture.md)."""
