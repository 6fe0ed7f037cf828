# %% [markdown]
# # Deep dive (lesson 11_stream_k): the first version — a forward walk, chained waits, and the model that predicts them
#
# Lesson 11's stream-K kernel walks each block's share of k-iterations **backwards**. Its first version walked
# forwards: it was correct, and on some shapes many times slower than the step it replaced. This notebook shows why
# (the waits chain through every block), how well lesson 11's k-iteration model predicts the slowdown from the order
# of the work alone, and what the fix bought.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_11
from gemm_steps.harness import results_files

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")

# %% [markdown]
# ## A chain through every block
#
# Walking its share forwards, in k-order, looks natural. But then a block's first stream-K piece is usually the
# *end* of a tile — a piece that waits for the blocks before it — and the piece it owes the next block, the *start*
# of a tile, comes last. Block 1 waits for block 0 to finish its whole share, block 2 for block 1, and so on. Lesson
# 11's model (one time unit per k-iteration, an owner waits for the other pieces of its tile) draws it on the small
# GPU of the lesson, 4 blocks and 5 tiles of 8 k-iterations; `·` is time spent waiting. `lesson_11.waits` reads the
# same schedule for who waits for whom:

# %%
print("Forwards (the first version):\n" + lesson_11.draw(5, 8, 4, backwards=False))
print("\nBackwards (step 11):\n" + lesson_11.draw(5, 8, 4))
for label, backwards in (("forwards", False), ("backwards", True)):
    w = lesson_11.waits(5, 8, 4, backwards=backwards)
    print(f"{label}: blocks that wait before raising their flag: {w.waited_before_flag or 'none'}; "
          f"longest chain of waits: {w.chain}")

# %% [markdown]
# The simulator, which runs blocks one after another, computes the right answer either way. Only a GPU shows the
# difference. The first version's sweep on the H200 used the rule of the time: split whenever the tiles do not fill
# whole waves (`tiles % blocks != 0`), with no threshold and no fallback to step 10:

# %%
lesson.show_code(inspect.getsource(lesson_11.first_rule))
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)
forward = lesson.load_shipped(results_files.EXPERIMENT_SCHEDULING_FORWARD_WALK_NVIDIA_H200,
                              "the same sweep with the first stream-K kernel, which walked each block's share forwards")

# %% [markdown]
# ## The measurement against the model
#
# For each shape the first rule split: the first version's time ÷ step 10's in the same run, and the model's
# forward-walk time ÷ one tile per block. The model knows nothing of the GPU but the order of the work:

# %%
if sweep and forward:
    found = lesson_11.forward_walk(sweep, forward)
    walk, worst = found.walk, found.walk[0][0]
    lesson.say(found.table)
    then = lesson_11.waits(worst["tiles"], worst["k_tiles"], sweep.G, lesson_11.first_rule, backwards=False)
    lesson.say(lesson.facts(found.numbers
                            | {f"grid of {sweep.G} blocks: longest chain, forward walk": then.chain,
                               "… blocks that wait before raising their flag": len(then.waited_before_flag),
                               "longest chain, backward walk": lesson_11.waits(worst["tiles"], worst["k_tiles"],
                                                                               sweep.G).chain}))

# %% [markdown]
# On the worst shape the first version took many times as long as step 10. Wherever the model predicts a chain
# (more than 2× slower), the measured slowdown is close to the model's — a model that knows nothing but the order of
# the work and who waits for whom. On the real grid, the forward walk chains a long row of waits one after another;
# the backward walk's longest chain is one link. The kernel was correct all along (`correct`: every run wrote every
# element of C, with errors no larger than step 10's). It was slow only because of the order in which blocks did
# their pieces.

# %% [markdown]
# ## The fix
#
# Walk the share backwards: the piece others wait for comes first, the piece that waits comes last, and no block
# waits for a block that is itself waiting. The four worst shapes again, first version → step 11 in the final
# sweep:

# %%
if sweep and forward:
    lesson.say(lesson_11.the_fix(walk))

# %% [markdown]
# The lesson the first version teaches is the one lesson 11's model encodes: in a schedule where blocks wait for
# each other, *the order in which each block does its pieces* matters as much as how much work each gets. Back to
# [lesson 11](../11_stream_k.ipynb).
