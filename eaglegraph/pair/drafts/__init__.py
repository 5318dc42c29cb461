"""One module per draft kind, named by the kind's value (`DraftKind.MTP` → `mtp.py`)."""
