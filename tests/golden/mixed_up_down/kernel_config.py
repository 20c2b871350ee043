# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)
from pathlib import Path

_ROOT_DIR = Path(__file__).parent

RUNTIME_CONFIG = {"aicpu_thread_num": None}

ORCHESTRATION = {
	"name": "mixed",
	"source": str(_ROOT_DIR / "program.pypto"),
	"function_name": "mixed",
}

KERNELS = [
	{"func_id": 0, "name": "mixed_1", "source": str(_ROOT_DIR / "kernels" / "aic" / "mixed_1.pto"), "core_type": "aic"},
	{"func_id": 1, "name": "mixed_1", "source": str(_ROOT_DIR / "kernels" / "aiv" / "mixed_1.pto"), "core_type": "aiv"},
]
