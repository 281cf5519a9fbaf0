"""gdsdoctor: diagnose the GPU checkpoint storage path (GDS, NVMe, NVMe-oF, PCIe, filesystems)."""

__version__ = "0.1.0"
BUNDLE_FORMAT = "gdsdoctor.bundle"
BUNDLE_VERSION = 1
# 2.0: a remediation item is {command, effect, note}; a finding has verify commands.
REPORT_SCHEMA_VERSION = "2.2"
FLEET_SCHEMA_VERSION = "1.1"
# The time limit for capturing a host or reading the inputs, all of them together (--deadline).
DEFAULT_DEADLINE_S = 60.0
