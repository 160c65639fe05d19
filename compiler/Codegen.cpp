//===- Codegen.cpp - tfm IR to a native object file -------------*- C++ -*-===//

#include "compiler/Codegen.h"
#include "compiler/WeightsFile.h"

#include "tfm/abi/ModelInfo.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include <cstring>
#include <thread>

using namespace mlir;
using namespace mlir::tfm;

/// tfm_<name>(void **args) { _mlir_ciface_<name>(*args[0], ...) } where
/// pointer parameters (memref descriptors) take args[i] itself and scalar
/// ones the value args[i] points at.
static void addPackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  SmallVector<llvm::Function *> entries;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getName().starts_with("_mlir_ciface_"))
      entries.push_back(&f);
  for (llvm::Function *entry : entries) {
    std::string name =
        ("tfm_" + entry->getName().drop_front(strlen("_mlir_ciface_"))).str();
    auto *ptr = llvm::PointerType::getUnqual(ctx);
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                         /*isVarArg=*/false);
    auto *wrapper = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage, name, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
    SmallVector<llvm::Value *> args;
    for (auto [i, param] :
         llvm::enumerate(entry->getFunctionType()->params())) {
      llvm::Value *slot = b.CreateGEP(ptr, wrapper->getArg(0), b.getInt64(i));
      llvm::Value *argPtr = b.CreateLoad(ptr, slot);
      args.push_back(param->isPointerTy() ? argPtr
                                          : b.CreateLoad(param, argPtr));
    }
    b.CreateCall(entry, args);
    b.CreateRetVoid();
  }
}

/// The constants `tfm_model_info_data` (tfm/abi/ModelInfo.h: the model's
/// architecture and the weights layout's fingerprint, as i64s) and
/// `tfm_model_bad_words`; `precision` is the module's.
static LogicalResult addModelInfo(llvm::Module &llvmModule, ModuleOp module,
                                  Precision precision) {
  llvm::LLVMContext &ctx = llvmModule.getContext();
  auto model = module->getAttrOfType<DictionaryAttr>("tfm.model");
  auto size = module->getAttrOfType<IntegerAttr>(kWeightsSizeAttr);
  if (!model || !size)
    return failure();
  SmallVector<uint64_t> fields = {tfm_runtime::kAbiVersion,
                                  layoutFingerprint(module)};
  for (StringRef key : kModelInfoKeys) {
    auto value = model.getAs<IntegerAttr>(key);
    if (!value)
      return failure();
    fields.push_back(value.getInt());
  }
  // The generation keys are optional in the IR: absent means none.
  for (StringRef key : {"forced_eos_token_id", "forced_bos_token_id"}) {
    auto forced = model.getAs<IntegerAttr>(key);
    fields.push_back(forced ? forced.getInt() : -1);
  }
  fields.push_back(size.getInt());
  fields.push_back(precisionCode(precision));
  // Absent in hand-written IR: the heads split d_model.
  auto headDim = model.getAs<IntegerAttr>("decoder_head_dim");
  int64_t heads = model.getAs<IntegerAttr>("decoder_heads").getInt();
  int64_t dModel = model.getAs<IntegerAttr>("d_model").getInt();
  fields.push_back(headDim ? headDim.getInt() : dModel / heads);
  // Where decode_step's caller chooses the output projection's rows from.
  auto chosen = module->getAttrOfType<DictionaryAttr>("tfm.caller_rows");
  auto panels = chosen ? chosen.getAs<DenseI64ArrayAttr>("output_panels")
                       : DenseI64ArrayAttr();
  auto bias = chosen ? chosen.getAs<DenseI64ArrayAttr>("output_bias")
                     : DenseI64ArrayAttr();
  if (!panels || panels[1] == 0)
    return failure();
  fields.append({uint64_t(panels[0]), uint64_t(panels[1]),
                 bias ? uint64_t(bias[0]) : uint64_t(-1)});
  // The repetition guards of the checkpoint's generation config (absent in
  // hand-written IR: off); the penalty's double as its bits.
  auto penalty = model.getAs<FloatAttr>("repetition_penalty");
  auto ngrams = model.getAs<IntegerAttr>("no_repeat_ngram_size");
  double penaltyValue = penalty ? penalty.getValueAsDouble() : 1.0;
  uint64_t penaltyBits;
  std::memcpy(&penaltyBits, &penaltyValue, sizeof penaltyBits);
  fields.append({ngrams ? uint64_t(ngrams.getInt()) : 0, penaltyBits});
  llvm::Constant *init = llvm::ConstantDataArray::get(ctx, fields);
  new llvm::GlobalVariable(llvmModule, init->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, init,
                           "tfm_model_info_data");
  // The bad words: their count, then each one's length and tokens.
  auto badWords = model.getAs<ArrayAttr>("bad_words_ids");
  if (!badWords)
    badWords = ArrayAttr::get(module.getContext(), {});
  SmallVector<uint64_t> words = {badWords.size()};
  for (Attribute a : badWords) {
    auto ids = dyn_cast<DenseI64ArrayAttr>(a);
    if (!ids)
      return failure();
    words.push_back(ids.size());
    words.append(ids.asArrayRef().begin(), ids.asArrayRef().end());
  }
  llvm::Constant *wordsInit = llvm::ConstantDataArray::get(ctx, words);
  new llvm::GlobalVariable(llvmModule, wordsInit->getType(),
                           /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, wordsInit,
                           "tfm_model_bad_words");
  // Which backend runs each op kind and shape (tfm-select-backend), as text
  // in the artifact: `translator --model-info` prints it.
  auto choice = module->getAttrOfType<StringAttr>("tfm.backend_choice");
  llvm::Constant *text =
      llvm::ConstantDataArray::getString(ctx, choice ? choice.getValue() : "");
  new llvm::GlobalVariable(llvmModule, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           "tfm_model_backends");
  return success();
}

static llvm::Error codegenError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The TargetMachine for `options`' CPU and features (the host's by
/// default), optimizing, with mul + add contracted into FMAs.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CodegenOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return codegenError("no LLVM target for " + triple + ": " + error);
  std::string cpu = options.targetCpu.empty()
                        ? llvm::sys::getHostCPUName().str()
                        : options.targetCpu;
  std::string features = options.targetFeatures;
  if (features.empty() && options.targetCpu.empty()) {
    SmallVector<std::string> enabled;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      enabled.push_back((feature.second ? "+" : "-") + feature.first().str());
    features = llvm::join(enabled, ",");
  }
  llvm::TargetOptions targetOptions;
  // mul + add become FMAs; reductions keep their order.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return codegenError("cannot create a target machine for " + cpu);
  return machine;
}

llvm::Expected<VectorTarget>
mlir::tfm::targetVectorUnit(const CodegenOptions &options) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  const llvm::MCSubtargetInfo *info = (*machine)->getMCSubtargetInfo();
  return VectorTarget{info->checkFeatures("+avx512f") ? 16 : 8,
                      info->checkFeatures("+avx512bf16"),
                      info->checkFeatures("+avx512vnni")};
}

/// Optimizes the module in `bitcode` at `options.optLevel` in a context of
/// its own and writes its object file to `path`; "" or what went wrong.
static std::string optimizeAndEmit(StringRef bitcode, const std::string &path,
                                   const CodegenOptions &options) {
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bitcode, "tfm_model"), context);
  if (!module)
    return toString(module.takeError());
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options);
  if (!machine)
    return toString(machine.takeError());
  (*module)->setDataLayout((*machine)->createDataLayout());
  (*module)->setTargetTriple((*machine)->getTargetTriple().str());
  if (llvm::Error err = makeOptimizingTransformer(
          options.optLevel, 0, machine->get())(module->get()))
    return toString(std::move(err));
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return "cannot write " + path + ": " + ec.message();
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, out.os(), nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return "the target cannot emit object files";
  codegen.run(**module);
  out.keep();
  return "";
}

llvm::Expected<std::vector<std::string>>
mlir::tfm::emitObjectFiles(ModuleOp module, llvm::StringRef pathStem,
                           const CodegenOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  // The module's tfm.* attributes mean nothing to LLVM: read what the
  // runtime needs from them, then translate without them.
  llvm::LLVMContext llvmContext;
  auto infoModule =
      std::make_unique<llvm::Module>("tfm_model_info", llvmContext);
  llvm::Expected<Precision> precision = modulePrecision(module);
  if (!precision)
    return codegenError(llvm::toString(precision.takeError()));
  if (failed(addModelInfo(*infoModule, module, *precision)))
    return codegenError("the module lacks tfm.model or its weights layout");
  OwningOpRef<ModuleOp> stripped = module.clone();
  for (NamedAttribute attr : module->getAttrs())
    if (attr.getName().getValue().starts_with("tfm."))
      (*stripped)->removeAttr(attr.getName());
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*stripped, llvmContext, "tfm_model");
  if (!llvmModule)
    return codegenError("cannot translate the model to LLVM IR");
  if (llvm::Linker::linkModules(*llvmModule, std::move(infoModule)))
    return codegenError("cannot add the model info");
  addPackedWrappers(*llvmModule);

  // LLVM's optimizer and code generator take most of a compile and run on
  // one thread per module: split the functions (round robin by size) into
  // one module per thread, each optimized and emitted on its own.
  unsigned parts = std::max(1u, options.threads);
  SmallVector<SmallString<0>> bitcode;
  auto keep = [&](const llvm::Module &part) {
    bitcode.emplace_back();
    llvm::raw_svector_ostream os(bitcode.back());
    llvm::WriteBitcodeToFile(part, os);
  };
  if (parts == 1)
    keep(*llvmModule);
  else
    llvm::SplitModule(
        *llvmModule, parts,
        [&](std::unique_ptr<llvm::Module> part) { keep(*part); },
        /*PreserveLocals=*/false, /*RoundRobin=*/true);
  std::vector<std::string> paths, errors(bitcode.size());
  for (size_t i = 0; i < bitcode.size(); ++i)
    paths.push_back((pathStem + "." + Twine(i) + ".o").str());
  std::vector<std::thread> workers;
  for (size_t i = 0; i < bitcode.size(); ++i)
    workers.emplace_back(
        [&, i] { errors[i] = optimizeAndEmit(bitcode[i], paths[i], options); });
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return codegenError(error);
  return paths;
}
