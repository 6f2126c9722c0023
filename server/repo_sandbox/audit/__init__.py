"""The audit trail and secret masking.

- `patterns`: the secrets we recognise (`RULES`); `keys`: private-key blocks; `masking`: `mask_text`, which
  applies both (shared by the audit log and by output masking); `known`: secrets seen once, masked everywhere;
- `redact`: the redaction processors over an event dict; `events`: event shapes and the processor chain;
- `sink`: the background writer, the size-rotated file and the stderr stream (the only I/O);
- `log`: `AuditLog`, the API (`workspace.audit.decision(...)`); `stage`: the audit and output-masking stages;
- `output`: which fields of which tool are masked; `view`: `repo-sandbox audit tail|stats`.
"""
