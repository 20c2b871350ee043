# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)
from pathlib import Path

_ROOT_DIR = Path(__file__).parent

RUNTIME_CONFIG = {"aicpu_thread_num": None}

ORCHESTRATION = {
	"name": "split_k_chained",
	"source": str(_ROOT_DIR / "program.pypto"),
	"function_name": "split_k_chained",
}

KERNELS = [
	{"func_id": 0, "name": "zero_init", "source": str(_ROOT_DIR / "kernels" / "aiv" / "zero_init.pto"), "core_type": "aiv"},
	{"func_id": 1, "name": "split_k", "source": str(_ROOT_DIR / "kernels" / "aic" / "split_k.pto"), "core_type": "aic"},
]
