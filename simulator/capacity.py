"""How many KV tokens a simulated server gets, from its flags and a model profile.

SGLang sizes its KV pool after loading the weights (`profile_max_num_token`):

    rest_memory = available_after_weights - total_gpu_memory * (1 - mem_fraction_static)
    max_total_num_tokens = rest_memory / cell_size

so, per GPU, KV GiB = total * f - W, where W is everything that is not KV (weights, activations
reserved by the profile run, CUDA graphs, NCCL buffers). The simulator uses exactly that shape:

    max_total_num_tokens = (GPU_GIB * f - W_GIB) * 2**30 / (CELL_BYTES * dtype_factor)

with `dtype_factor` 1 for bf16 and 0.5 for the fp8 KV dtypes. For an MLA model every TP rank holds the
whole compressed latent, so the pool does not grow with TP.

The constants for Kimi-K2.5 are FITTED, not derived: GPU_GIB is an H200 as torch reports it
(140.4 GiB) and the two unknowns W_GIB and CELL_BYTES are solved from the two bf16 measurements of
the run (0.85 -> 116K, 0.88 -> 159K tokens): CELL_BYTES = 105,170 and W_GIB = 107.98. The third
measurement (0.90 + fp8_e4m3 -> 376K) is then a prediction: the formula gives 375.3K (-0.2%).
The nominal MLA latent is 61 layers x (512 + 64) x 2 bytes = 70,272 bytes a token; the fit says the
pool grows by 1.5x less per unit of mem fraction than that cell would allow, which the fitted cell
absorbs (it is an effective number, honest only for this model on this host).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30
FP8_KV_DTYPES = frozenset({"fp8_e5m2", "fp8_e4m3", "mxfp8"})
FP4_KV_DTYPES = frozenset({"fp4_e2m1", "nvfp4", "fp4_mx_block16"})
OOM_HEADROOM_GIB = 10.0  # below this per-GPU headroom the CUDA-graph capture runs out of memory


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What the simulator needs to know about a served model."""

    name: str
    architecture: str
    cell_bytes: int  # KV bytes per token at bf16, per GPU (effective, see module docstring)
    non_kv_gib: float  # per-GPU memory that is not KV at the reference TP size
    reference_tp: int
    mla: bool  # MLA: every TP rank keeps the whole latent, the pool does not split across ranks
    context_len: int
    max_running_default: int
    weights_gib: float  # reported as "mem usage" of the weight load


KIMI_K25 = ModelProfile(
    name="Kimi-K2.5",
    architecture="DeepseekV3ForCausalLM",
    cell_bytes=105_170,
    non_kv_gib=107.98,
    reference_tp=8,
    mla=True,
    context_len=262_144,
    max_running_default=2048,
    weights_gib=72.60,
)

# A small dense model so that any other --model-path still gets sensible numbers: Llama-3-8B-like,
# 32 layers x 8 KV heads x 128 dims x (K + V) x 2 bytes.
GENERIC_8B = ModelProfile(
    name="generic-8b",
    architecture="LlamaForCausalLM",
    cell_bytes=131_072,
    non_kv_gib=24.0,
    reference_tp=1,
    mla=False,
    context_len=131_072,
    max_running_default=4096,
    weights_gib=14.96,
)

PROFILES: tuple[ModelProfile, ...] = (KIMI_K25, GENERIC_8B)


def profile_for(model_path: str) -> ModelProfile:
    """The profile whose family name appears in `model_path`; the generic one otherwise."""
    lowered = model_path.lower()
    if "kimi" in lowered or "deepseek" in lowered:
        return KIMI_K25
    return GENERIC_8B


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str = "NVIDIA H200"
    total_gib: float = 140.4  # torch.cuda.get_device_properties().total_memory of a 141 GB H200


@dataclass(frozen=True, slots=True)
class Capacity:
    max_total_num_tokens: int
    kv_gib: float  # per GPU
    available_gpu_mem_gib: float  # what is left after the pool and graphs, as SGLang logs it
    oom: bool  # the start would fail: too little headroom for activations and CUDA graphs


def dtype_factor(kv_cache_dtype: str) -> float:
    if kv_cache_dtype in FP8_KV_DTYPES:
        return 0.5
    if kv_cache_dtype in FP4_KV_DTYPES:
        return 0.25
    return 1.0


def default_mem_fraction(profile: ModelProfile) -> float:
    """SGLang picks the fraction from the GPU size when the flag is left out; 0.85 on an H200 here."""
    return 0.85 if profile.mla else 0.88


def kv_capacity(
    profile: ModelProfile,
    mem_fraction_static: float,
    kv_cache_dtype: str = "auto",
    tp_size: int = 1,
    gpu: GpuSpec = GpuSpec(),
) -> Capacity:
    """KV pool size for one DP replica (see the module docstring for the formula and its fit)."""
    non_kv = profile.non_kv_gib
    cell = profile.cell_bytes * dtype_factor(kv_cache_dtype)
    if not profile.mla:
        # Dense models split weights and KV heads across TP ranks.
        non_kv = profile.non_kv_gib * profile.reference_tp / max(tp_size, 1)
        cell = cell / max(tp_size, 1)
    kv_gib = gpu.total_gib * mem_fraction_static - non_kv
    tokens = max(int(kv_gib * GIB / cell), 0)
    headroom = gpu.total_gib * (1.0 - mem_fraction_static)
    return Capacity(
        max_total_num_tokens=tokens,
        kv_gib=max(kv_gib, 0.0),
        available_gpu_mem_gib=round(headroom - 1.9, 2),
        oom=headroom < OOM_HEADROOM_GIB or tokens <= 0,
    )


def host_pool_tokens(profile: ModelProfile, hicache_size_gb: float, kv_cache_dtype: str) -> int:
    """Tokens the hierarchical cache's host pool holds (--hicache-size is GB per rank)."""
    return int(hicache_size_gb * 1e9 / (profile.cell_bytes * dtype_factor(kv_cache_dtype)))
