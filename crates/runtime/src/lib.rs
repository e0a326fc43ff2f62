//! Green threads on a work-stealing pool of pinned workers.
