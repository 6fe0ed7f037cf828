# %% [markdown]
# # Deep dive 16 — The 8192³ drop: the tile order's DRAM traffic and the power limit
#
# Lesson 16's steps, like step 15 before them, ran slower per FLOP at 8192³ than at 4096³ in the course's runs; the
# issue that started the Hopper chapter asked to explain it and fix it. Three experiments, each with its prediction
# written in its docstring before it ran: the tile order (`experiments/warpgroup_order_bench.py`), the clocks under
# load (`experiments/clocks_under_load.py`) and the benchmark's timing (`experiments/timing_method.py`). All on an
# H200.

# %%
from gemm_steps.course import lesson, lesson_16
from gemm_steps.course.timings import load_run, producer_order_run

run = producer_order_run()
order, clocks, timing = (load_run(name) for name in (lesson_16.ORDER_RUN, lesson_16.CLOCKS_RUN,
                                                     lesson_16.TIMING_RUN))
for kernel, q in lesson_16.drop(run).items():
    print(f"{kernel:18s} 8192³ / 4096³: {q.ratio:.3f}; SM clock {q.mhz[0]:.0f} -> {q.mhz[1]:.0f} MHz; "
          f"per clock {q.per_clock:.3f}")

# %% [markdown]
# That is lesson 16's run, which records each kernel's SM clock (the median after each timed launch). The clock
# already tells most of the story. But it was not recorded when the question came up, and the first suspect was
# the memory.
#
# ## Suspect 1: the DRAM traffic of the tile order
#
# 132 blocks (one per SM) of 256 × 128 tiles run together and walk through K at about the same pace, so each wave
# reads from DRAM every A panel (256 × K floats) and B panel (K × 128) its tiles touch — if the L2 keeps nothing
# between waves. Row-major, a wave at 8192³ spans a few rows of tiles and every column; in groups of 8 tile-rows
# (step 10's order), 8 rows and about 17 columns. The model, computed from the kernel's tile formula for the first
# wave:

# %%
for size in (4096, 8192):
    for group in (1, 4, 8, 16):
        w = lesson_16.wave_traffic(size, group, run["environment"]["sm_count"])
        print(f"{size}³, groups of {group:2d}: {w.a_panels} A + {w.b_panels} B panels = {w.mb:.0f} MB, "
              f"{w.mb_per_gflop:.2f} MB per GFLOP")

# %% [markdown]
# Row-major, 8192³ reads more bytes per FLOP than 4096³; grouped by 8, fewer than either size row-major. If the
# drop is the traffic, grouping brings 8192³ up to 4096³'s speed. Measured, in one run (step 16's kernel, then an
# experiment's build, in four orders):

# %%
lesson.say(lesson_16.order_table(order))
gain = lesson_16.order_gain(order)
print("groups of 8 over row-major: " + ", ".join(f"{lesson.size_label(s)} {g:.3f}×" for s, g in gain.gain.items())
      + f"; the drop {gain.drop_row_major:.1%} row-major, {gain.drop_grouped:.1%} grouped: "
      f"{gain.share_recovered:.0%} of it recovered")

# %% [markdown]
# Grouping recovers part of the drop, not all. Nsight Compute confirms the bytes — and says something more: timed
# by the profiler, one launch at 8192³ is not slower per FLOP than one at 4096³, at about the same clock:

# %%
profile = lesson_16.order_profile()
for (size, group), q in profile.items():
    print(f"{size}³, groups of {group}: DRAM read {q.dram_gb:.2f} GB, L2 hit rate {q.l2_hit_pct:.1f} %, "
          f"{q.ms:.3f} ms at {q.ghz:.2f} GHz = {lesson_16.profile_tflops(profile)[(size, group)]:.0f} TFLOPS")

# %% [markdown]
# So the rest of the drop is not in the kernel.
#
# ## Suspect 2: the clock
#
# The H200's board is limited to 700 W. An 8192³ launch runs about 8× longer than a 4096³ one, so a benchmark's
# batch of them keeps the tensor cores busy for much longer. Two measurements: the clock and power while each kernel
# runs back to back for seconds (`nvidia-smi`), and the SM clock right after each of 20 launches timed the way the
# benchmark times them (a one-thread probe kernel counting `%clock64` over 20 µs of `%globaltimer`):

# %%
lesson.say(lesson_16.clocks_table(clocks))

# %% [markdown]
# Back to back, every kernel sits at the power limit with the clock well below its maximum. After single timed
# launches the clock is back at its maximum at 4096³; at 8192³ the slowest launches end below it. Long stretches of
# 8192³ work reach the limit, short ones do not. Since then the benchmark records the clock per record (the first
# table).
#
# ## And not the timer
#
# One more suspect: the benchmark records a start event, launches, records an end event. If the host took longer to
# launch than the GPU took for the fills before it, the host's time would be inside the events. Timed the
# benchmark's way and with the launches queued behind a kernel that spins on the GPU first:

# %%
lesson.say(lesson_16.timing_table(timing))
print(f"the course's kernels: queued and benchmark agree within {lesson_16.timing_agreement(timing):.1%}")

# %% [markdown]
# For the course's kernels the fills hide the launch; for cuBLAS, whose host side costs more, the benchmark's way is
# slower than queued. That cuts against the course's kernels, not for them.
#
# **Verdict.** The drop is about a third tile order (DRAM traffic, fixed by step 16's grouped order) and the rest
# the power limit under sustained load — which no kernel change in the course removes, and which lands on cuBLAS
# too. Back to [lesson 16](../16_tma_pipeline.ipynb).
