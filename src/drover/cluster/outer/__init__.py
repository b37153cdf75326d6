"""The outer schedulers an allocation queue asks for allocations (`drover alloc`), one module
each, behind base.OuterScheduler: see base.py for what a new one provides."""
