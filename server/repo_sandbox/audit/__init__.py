"""The audit trail and secret masking.

- `patterns`: recognisers for secrets in text and `mask_text` (shared by the log and by output masking);
- `redact`: the redaction processors over an event dict; `events`: event shapes and the processor chain;
- `sink`: the background writer, the size-rotated file and the stderr stream (the only I/O);
- `log`: `AuditLog`, the API (`workspace.audit.decision(...)`); `stage`: the audit and output-masking stages;
- `output`: which fields of which tool are masked; `view`: `repo-sandbox audit tail|stats`.
"""
