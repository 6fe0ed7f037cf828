# %% [markdown]
# # Deep dive 17 — `setmaxnreg` needs the whole program: relocatable PTX against LTO
#
# Step 17's producer warpgroup lowers its registers with `setmaxnreg.dec` and the consumers raise theirs with
# `setmaxnreg.inc`. For a long time the course believed that ptxas ignores the instruction in Numba's kernels: its
# report said so. It did — in the way the course asked for the report. Here both ways, compiled on this CPU (NVVM
# and nvJitLink from numba-cuda's CUDA wheels; no GPU needed), for step 17, step 16 (no hand-off) and the earlier
# build whose producer was a ninth *warp* (`gemm_steps/course/ninth_warp.py`).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_17

budget = lesson_17.register_budget(gemm_steps.get_step("warp_specialized"))
reports = lesson_17.ptxas_reports(["step:warp_specialized", "step:tma_pipeline",
                                   "gemm_steps.course.ninth_warp:ptx_kernels"])
lesson.say(lesson_17.ptxas_table(reports))
print(f"{budget.registers:,} registers over {budget.threads} threads: {budget.at_entry} a thread at entry")

# %% [markdown]
# **Relocatable** (`harness.ptx.ptxas_info`): the PTX assembled as one unit of a program that will be linked later —
# how the course first read ptxas's report. A unit cannot know what other units will call with how many registers,
# so ptxas drops `setmaxnreg` "to maintain compatibility across compilation units" (warning C7504). Step 17's
# consumers then live at the entry cap: they spill, and ptxas serialises their `wgmma` for want of registers
# (C7512).
#
# **LTO** (`harness.ptx.kernel_ptxas_info`): NVVM emits LTO-IR and nvJitLink links it with `-lto` into one whole
# program — what numba-cuda does on a GPU where nvJitLink is installed (the course's set-up). Now ptxas sees every
# caller and honours the hand-off: the entry count stays at the cap for the block's threads, nothing spills, no
# `wgmma` is serialised.
#
# The ninth-warp build has no `setmaxnreg`: its 288 threads are capped as if they were 384 (registers allotted a
# warpgroup at a time, or four register-file parts, one per scheduler, the part with three warps setting the cap:
# for one block both give this cap, lesson 17), either way, and its `wgmma` are serialised either way — which is
# why the producer had to become a warpgroup that can give its registers back. The course's PTX claims about registers
# (`PTXAS_EXPECT` in each step, tests/test_ptx.py) use the LTO build; the portability checks still assemble the
# relocatable PTX.
#
# Back to [lesson 17](../17_warp_specialized.ipynb).
