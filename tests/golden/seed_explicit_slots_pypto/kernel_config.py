# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)
from pathlib import Path

_ROOT_DIR = Path(__file__).parent

RUNTIME_CONFIG = {"aicpu_thread_num": None}

ORCHESTRATION = {
	"name": "explicit_slots",
	"source": str(_ROOT_DIR / "program.pypto"),
	"function_name": "explicit_slots",
}

KERNELS = [
	{"func_id": 0, "name": "explicit_slots_incore_0", "source": str(_ROOT_DIR / "kernels" / "aiv" / "explicit_slots_incore_0.pto"), "core_type": "aiv"},
]
