-- Generic resources and node features: the devices (GPUs...) each attempt holds, as
-- {"gpu": [0, 2]}; each node's devices, as its hello announced them (["gpu:a100", "gpu:a100"]),
-- and its features (["avx512", "arch=lx-amd64"]), kept so that what jobs ask for is checked
-- against the nodes the cluster has even before they say hello again after a restart.
ALTER TABLE attempts ADD COLUMN gres TEXT;
ALTER TABLE nodes ADD COLUMN gres TEXT;
ALTER TABLE nodes ADD COLUMN features TEXT;
