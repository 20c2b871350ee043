# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)
from pathlib import Path

_ROOT_DIR = Path(__file__).parent

RUNTIME_CONFIG = {"aicpu_thread_num": None}

ORCHESTRATION = {
	"name": "unsplit",
	"source": str(_ROOT_DIR / "program.pypto"),
	"function_name": "unsplit",
}

KERNELS = [
	{"func_id": 0, "name": "unsplit_incore_0", "source": str(_ROOT_DIR / "kernels" / "aic" / "unsplit_incore_0.pto"), "core_type": "aic"},
]
