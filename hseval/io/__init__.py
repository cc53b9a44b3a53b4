"""hseval's files: folders, markers and locks (one output-folder transaction), and the run,
evaluation and prediction formats, each owned by one module that checks every value it reads."""
