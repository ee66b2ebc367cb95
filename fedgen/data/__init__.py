"""Datasets (torchvision layouts, synthetic, folders) and their federated splits.

One job per module; import the one that declares a name (this package re-exports nothing):
`common` (DatasetError, DatasetTensors), `datasets` (load_dataset, torch), `partition` (the
splits, torch-free at import), `decl` (DatasetDecl: what a dataset declares), `registry` (one
DatasetDecl per dataset), `files` (the built-ins' files), `locate`, `folder`, `folder_spec`
(FolderSpec), `synthetic`, `official_draws`, `split_export`. A light submodule does not load torch, so
`fedgen validate` never needs it.
"""
