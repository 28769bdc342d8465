"""A PEP 517 build backend for the Python package tessera that drives the project's CMake.

pip calls it for `pip install --no-build-isolation .` (pyproject.toml names it). build_wheel
configures the whole project in <source>/build-pip (kept between installs, so that a second one
rebuilds only what changed) with the libraries static, so that the extension carries the framework
inside it, builds the extension, installs it into a staging directory and zips that as a wheel for
the Python running pip. Offline: it needs only what the build needs (CMake, a C++20 compiler, MPI,
HDF5, and pybind11, mpi4py and numpy for this Python), no setuptools and no wheel package.

Options: CMAKE_ARGS in the environment (split like a shell command line) and
--config-settings=cmake.args="..." go to CMake's configure step; TESSERA_PIP_BUILD_DIR moves the
build directory; CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: the cores).
"""

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NAME = "tessera"


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        match = re.search(r"project\(Tessera\s+VERSION\s+([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("no project(Tessera VERSION ...) in CMakeLists.txt")
    return match.group(1)


def _tag():
    interpreter = "cp%d%d" % sys.version_info[:2]
    abi = interpreter + getattr(sys, "abiflags", "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (interpreter, abi, platform)


def _metadata():
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + _version(),
        "Summary: Distributed arrays over MPI ranks and GPUs",
        "License: BSD-3-Clause",
        "Requires-Python: >=3.9",
        "Requires-Dist: numpy",
        "Requires-Dist: mpi4py",
        "",
        "Tessera's distributed arrays from Python: see docs/PYTHON.md in the source tree.",
        "",
    ])


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: tessera_build\nRoot-Is-Purelib: false\nTag: %s\n" % _tag()


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _cmake_args(config_settings):
    args = shlex.split(os.environ.get("CMAKE_ARGS", ""))
    if config_settings:
        extra = config_settings.get("cmake.args") or config_settings.get("cmake-args")
        if isinstance(extra, str):
            args += shlex.split(extra)
        elif extra:
            args += list(extra)
    return args


def _run(command):
    print("tessera_build: " + " ".join(shlex.quote(c) for c in command), flush=True)
    subprocess.run(command, check=True)


def _build(staging, config_settings):
    """Configures, builds and installs the package into `staging`; returns nothing."""
    build = os.environ.get("TESSERA_PIP_BUILD_DIR") or os.path.join(SOURCE, "build-pip")
    generator = ["-G", "Ninja"] if shutil.which("ninja") and not os.path.exists(os.path.join(build, "Makefile")) else []
    if os.path.exists(os.path.join(build, "CMakeCache.txt")):
        generator = []
    _run(["cmake", "-S", SOURCE, "-B", build] + generator + [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DTESSERA_BUILD_PYTHON=ON",
        "-DTESSERA_BUILD_TESTS=OFF",
        "-DTESSERA_BUILD_APPS=OFF",
        "-DTESSERA_BUILD_BENCH=OFF",
        "-DTESSERA_PYTHON_INSTALL_DIR=.",
        "-DPython3_EXECUTABLE=" + sys.executable,
    ] + _cmake_args(config_settings))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run(["cmake", "--build", build, "--target", "tessera_python", "-j", jobs])
    _run(["cmake", "--install", build, "--component", "python", "--prefix", staging])


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


# ---------------------------------------------------------------------------------------------
# PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata())
    with open(os.path.join(info, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    staging = tempfile.mkdtemp(prefix="tessera-wheel-")
    try:
        _build(staging, config_settings)
        name = "%s-%s-%s.whl" % (NAME, _version(), _tag())
        path = os.path.join(wheel_directory, name)
        records = []
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
            for root, _, files in sorted(os.walk(staging)):
                for file in sorted(files):
                    full = os.path.join(root, file)
                    arcname = os.path.relpath(full, staging).replace(os.sep, "/")
                    with open(full, "rb") as f:
                        data = f.read()
                    info = zipfile.ZipInfo(arcname)
                    info.external_attr = (os.stat(full).st_mode & 0o777) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    wheel.writestr(info, data)
                    records.append(_record_line(arcname, data))
            for file, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file())):
                arcname = _dist_info() + "/" + file
                wheel.writestr(arcname, text)
                records.append(_record_line(arcname, text.encode()))
            records.append(_dist_info() + "/RECORD,,")
            wheel.writestr(_dist_info() + "/RECORD", "\n".join(records) + "\n")
        return name
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    """The tracked source tree (git ls-files where git is there, else the tree without build
    directories) as NAME-VERSION.tar.gz."""
    base = "%s-%s" % (NAME, _version())
    try:
        files = subprocess.run(["git", "-C", SOURCE, "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split("\n")
        files = [f for f in files if f and os.path.isfile(os.path.join(SOURCE, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".git", "__pycache__"))]
            files += [os.path.relpath(os.path.join(root, n), SOURCE) for n in names]
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for f in sorted(files):
            tar.add(os.path.join(SOURCE, f), arcname=base + "/" + f)
        data = _metadata().encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(data)
        import io  # noqa: PLC0415
        tar.addfile(info, io.BytesIO(data))
    return name
