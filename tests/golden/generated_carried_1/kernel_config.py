# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)
from pathlib import Path

_ROOT_DIR = Path(__file__).parent

RUNTIME_CONFIG = {"aicpu_thread_num": None}

ORCHESTRATION = {
	"name": "kernel",
	"source": str(_ROOT_DIR / "program.pypto"),
	"function_name": "kernel",
}

KERNELS = [
	{"func_id": 0, "name": "kernel", "source": str(_ROOT_DIR / "kernels" / "aiv" / "kernel.pto"), "core_type": "aiv"},
]
