# -*- Python -*-
# lit configuration of the tfm regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TFM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "models", "unit", "reference", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfm_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.tfm_python))
# A deterministic test checkpoint: %make_model OUT_DIR [options]
config.substitutions.append(
    ("%make_model", "%s %s" % (config.tfm_python,
                               os.path.join(config.tfm_src_root, "test", "models",
                                            "make_test_model.py"))))
config.substitutions.append(
    ("%corrupt_model", "%s %s" % (config.tfm_python,
                                  os.path.join(config.tfm_src_root, "test", "models",
                                               "corrupt_model.py"))))
# The reference implementation and the comparison of outputs with it.
config.substitutions.append(
    ("%reference", "%s %s" % (config.tfm_python,
                              os.path.join(config.tfm_src_root, "test", "reference",
                                           "reference.py"))))
config.substitutions.append(
    ("%compare", "%s %s" % (config.tfm_python,
                            os.path.join(config.tfm_src_root, "test", "reference",
                                         "compare.py"))))
config.substitutions.append(("%tfm_src_root", config.tfm_src_root))
config.substitutions.append(("%tfm_obj_root", config.tfm_obj_root))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.tfm_tools_dir, config.llvm_tools_dir]
tools = ["tfm-opt", "tfm-run", "tfmc"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tfm_tools_dir, append_path=True)
