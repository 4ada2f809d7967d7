"""`pip install .`: configures and builds this CMake tree (tests and apps off, the Python package on) and lays the
result out inside the package: brain/_brain*.so, brain/lib/libbrain_core.so.0 (the module's RPATH includes
$ORIGIN/lib) and brain/lib/brain/plugins/ (where the core looks for plugins, beside itself). BRAIN_CMAKE_BUILD_DIR
reuses an already configured build tree; BRAIN_CMAKE_ARGS adds CMake arguments (e.g. -DBRAIN_BUILD_CUDA_PLUGIN=OFF).
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).parent.resolve()
VERSION = re.search(r"project\(brain VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("BRAIN_CMAKE_BUILD_DIR")
        build = pathlib.Path(build).resolve() if build else pathlib.Path(self.build_temp).resolve() / "cmake"
        if not (build / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), *generator,
                                   "-DCMAKE_BUILD_TYPE=Release", "-DBRAIN_BUILD_PYTHON=ON",
                                   "-DBRAIN_BUILD_TESTS=OFF", "-DBRAIN_BUILD_APPS=OFF",
                                   f"-DPython3_EXECUTABLE={sys.executable}",
                                   *shlex.split(os.environ.get("BRAIN_CMAKE_ARGS", ""))])
        jobs = os.environ.get("BRAIN_JOBS", str(os.cpu_count() or 1))
        # The module (which brings the core and the CPU plugin) and the other plugins this tree configured.
        targets = ["brain_python"] + [t for t in ("brain_plugin_cuda", "brain_plugin_metal")
                                      if any(build.glob(f"**/CMakeFiles/{t}.dir"))]
        subprocess.check_call(["cmake", "--build", str(build), "-j", jobs, "--target", *targets])
        package = pathlib.Path(self.get_ext_fullpath(ext.name)).parent
        with tempfile.TemporaryDirectory() as stage:
            for component in ("core", "plugin_cpu", "plugin_cuda", "plugin_metal", "python"):
                subprocess.call(["cmake", "--install", str(build), "--prefix", stage, "--component", component],
                                stdout=subprocess.DEVNULL)
            stage = pathlib.Path(stage)
            module = next(stage.glob("**/brain/_brain*.so"))
            core = next(stage.glob("**/libbrain_core.so.[0-9]"))
            (package / "lib" / "brain" / "plugins").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(module, package / module.name)
            shutil.copyfile(core, package / "lib" / core.name)
            for plugin in core.parent.glob("brain/plugins/libbrain_*.so"):
                shutil.copyfile(plugin, package / "lib" / "brain" / "plugins" / plugin.name)


setup(
    version=VERSION,
    packages=["brain"],
    package_dir={"brain": "python/brain"},
    package_data={"brain": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("brain._brain", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
