"""Populations (frl_population) and the ask/tell optimisers (frl_evo): OpenAI-ES and
Deep GA through fastrl.Population and fastrl.Evo."""

import gc
import math
import weakref

import numpy as np
import pytest

import fastrl
from fastrl import Status
from conftest import collect, touch

N = 10  # parameters of the quadratic problems
SMALL = {"es.noise_floats": 4096}  # a small noise table: fast to make


def es(initial=None, runtime=None, **options):
    options = {**SMALL, **options}
    if initial is None:
        initial = np.linspace(-1, 1, N, dtype=np.float32)
    return fastrl.Evo(initial, algo="es", runtime=runtime or fastrl.Runtime(threads=2, seed=5),
                      **options)


def ga(initial=None, runtime=None, **options):
    options = {"population": 16, "truncation": 4, "elites": 2, **options}
    if initial is None:
        initial = np.linspace(-1, 1, N, dtype=np.float32)
    return fastrl.Evo(initial, algo="ga", runtime=runtime or fastrl.Runtime(threads=2, seed=5),
                      **options)


def quadratic(x):
    return -((x.astype(np.float64) - 3.0) ** 2).sum(axis=1)


@pytest.fixture(scope="module")
def cartpole():
    rt = fastrl.Runtime(threads=2, seed=7)
    venv = fastrl.make_vec("CartPole-v1", num_envs=16, runtime=rt)
    policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                           hidden=[16], runtime=rt)
    return rt, venv, policy


# ---------------------------------------------------------------- config and creation

def test_short_names_resolve_by_algorithm():
    # es.lr, es.population... share last parts with ga.* and train.lr: "lr" stays
    # train.lr everywhere but inside Evo, where the algorithm's namespace comes first.
    assert fastrl.config.resolve_key("lr") == "train.lr"
    assert fastrl.Config(lr=1e-3).to_dict() == {"train.lr": 1e-3}
    assert fastrl.config.resolve_key("lr", "es") == "es.lr"
    assert fastrl.config.resolve_key("population", "ga") == "ga.population"
    assert fastrl.Config(algo="es", population=8, lr=0.1).to_dict() == {
        "train.algo": "es", "es.population": 8, "es.lr": 0.1}
    assert fastrl.Config("train.algo=ga", sigma=0.5).to_dict() == {
        "train.algo": "ga", "ga.sigma": 0.5}
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Config(population=8)
    assert ei.value.status == Status.ERR_UNKNOWN_NAME and "es.population" in ei.value.message
    e = es(population=6, lr=0.5)
    assert (e.algo, e.population, e.num_parameters, e.generation) == ("es", 6, N, 0)
    g = ga(population=12)
    assert (g.algo, g.population) == ("ga", 12)
    # The dict form of the brief: full keys.
    e2 = fastrl.Evo(np.zeros(3), {"train.algo": "es", "es.population": 4, **SMALL})
    assert (e2.population, e2.num_parameters) == (4, 3)
    assert fastrl.Evo.memory_size(1000, algo="es", population=8, noise_floats=4096) > 4096 * 4


def test_bad_settings_raise():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Evo(np.zeros(4))  # train.algo is ppo
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT and "train.algo" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        es(population=7)  # antithetic pairs
    assert ei.value.status == Status.ERR_RANGE and "even" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        es(initial=np.array([0.0, math.nan]))
    assert ei.value.status == Status.ERR_NONFINITE
    with pytest.raises(fastrl.Error) as ei:
        es(initial=np.zeros((2, 2)))
    assert ei.value.status == Status.ERR_SIZE
    with pytest.raises(fastrl.Error) as ei:
        ga(truncation=20)  # more parents than members
    assert ei.value.status == Status.ERR_RANGE


# ---------------------------------------------------------------- ES

def test_es_ask_gives_antithetic_pairs_around_the_centre():
    initial = np.linspace(-1, 1, N, dtype=np.float32)
    e = es(initial, population=8, sigma=0.1)
    centre, fit = e.best()
    assert np.array_equal(centre, initial) and math.isnan(fit)  # before any tell
    x = e.ask()
    assert x.shape == (8, N) and x.dtype == np.float32
    for i in range(0, 8, 2):
        np.testing.assert_allclose(x[i] + x[i + 1], 2 * centre, rtol=0, atol=1e-6)
        assert not np.allclose(x[i], centre)  # a real perturbation
    # Pairs differ from each other (each takes its own slice of the noise table).
    assert not np.allclose(x[0], x[2])
    d = (x[0] - centre) / 0.1
    assert 0.2 < d.std() < 3  # sigma * standard normals


def test_ask_twice_is_identical_and_out_is_written_in_place():
    e = es(population=8)
    a = e.ask()
    out = np.full((8, N), 7.0, np.float32)
    b = e.ask(out=out)
    assert b is out and np.array_equal(a, out)
    e.tell(quadratic(a))
    c = e.ask()
    assert not np.array_equal(a, c)  # the next generation
    with pytest.raises(TypeError):
        e.ask(out=np.zeros((8, N), np.float64))
    with pytest.raises(ValueError):
        e.ask(out=np.zeros((8, N + 1), np.float32))
    with pytest.raises(ValueError):
        e.ask(out=np.zeros((N, 8), np.float32).T)
    ro = np.zeros((8, N), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        e.ask(out=ro)


def test_tell_errors_leave_the_optimiser_unchanged():
    e = es(population=8)
    with pytest.raises(fastrl.Error) as ei:
        e.tell(np.zeros(8))  # before ask
    assert ei.value.status == Status.ERR_STATE
    x = e.ask()
    f = quadratic(x)
    bad = f.copy()
    bad[5] = np.nan
    with pytest.raises(fastrl.Error) as ei:
        e.tell(bad)
    assert ei.value.status == Status.ERR_NONFINITE and "fitness[5]" in ei.value.message
    assert e.generation == 0
    for wrong in (f[:7], np.append(f, 0.0)):
        with pytest.raises(fastrl.Error) as ei:
            e.tell(wrong)
        assert ei.value.status == Status.ERR_SIZE
    with pytest.raises(fastrl.Error) as ei:
        e.tell(f.reshape(2, 4))
    assert ei.value.status == Status.ERR_SIZE
    # a mask or labels are no fitnesses (a bool array was read as 0s and 1s)
    for wrong in (f > f.mean(), np.array(["1"] * 8), np.array([None] * 8)):
        with pytest.raises(TypeError):
            e.tell(wrong)
    assert e.generation == 0
    assert np.array_equal(e.ask(), x)  # still the same generation
    e.tell(list(f))  # any sequence of numbers
    assert e.generation == 1
    assert e.best()[1] == pytest.approx(f.mean())  # ES: the generation's mean fitness


def test_es_solves_a_quadratic():
    e = es(np.zeros(N, np.float32), population=64, sigma=0.1, lr=0.1, weight_decay=0.0)
    start = quadratic(e.best()[0][None])[0]
    assert start == pytest.approx(-90)
    for _ in range(100):
        x = e.ask()
        e.tell(quadratic(x))
    centre = e.best()[0]
    end = quadratic(centre[None])[0]
    assert e.generation == 100
    assert end > -1.0, (start, end, centre)  # from -90: every coordinate near 3


# ---------------------------------------------------------------- GA

def test_ga_genome_rebuilds_the_member_bit_for_bit():
    g = ga(sigma=0.05, init_sigma=0.2)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = g.ask()
        before = [g.genome(m).tolist() for m in range(g.population)]
        g.tell(quadratic(x) + rng.normal(0, 0.1, g.population))
    x = g.ask()
    lengths = set()
    for m in range(g.population):
        seeds = g.genome(m)
        assert seeds.dtype == np.uint64 and seeds.ndim == 1
        lengths.add(len(seeds))
        rebuilt = g.rebuild(seeds)
        assert np.array_equal(rebuilt.view(np.uint32), x[m].view(np.uint32)), m
    assert max(lengths) == 5  # 1 starting seed + 4 generations of mutations (children)
    # Elites (members 0 and 1) go on unmutated: a genome of the last generation. A child
    # is a parent's genome plus one seed.
    assert g.genome(0).tolist() in before and g.genome(1).tolist() in before
    child = g.genome(g.population - 1).tolist()
    assert child[:-1] in before
    # A different genome gives different parameters.
    other = g.genome(1).copy()
    other[-1] ^= np.uint64(1)
    assert not np.array_equal(g.rebuild(other), x[1])
    with pytest.raises(fastrl.Error) as ei:
        g.genome(g.population)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error) as ei:
        g.rebuild([])
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error) as ei:
        es().genome(0)
    assert ei.value.status == Status.ERR_UNSUPPORTED


def test_ga_improves_and_keeps_its_best():
    g = ga(np.zeros(N, np.float32), population=32, truncation=8, elites=2, sigma=0.3,
           init_sigma=1.0)
    for _ in range(30):
        g.tell(quadratic(g.ask()))
    params, fitness = g.best()
    assert fitness == pytest.approx(quadratic(params[None])[0])  # deterministic fitness
    assert fitness > -10  # from -90 at the initial point


# ---------------------------------------------------------------- save / load

@pytest.mark.parametrize("make", [es, ga])
def test_save_load_roundtrip(tmp_path, make):
    rt = fastrl.Runtime(threads=1, seed=11)
    a = make(runtime=rt, population=8) if make is es else make(runtime=rt)
    for _ in range(3):
        a.tell(quadratic(a.ask()))
    path = tmp_path / "opt.frl"
    a.save(path)
    nxt = a.ask()
    best = a.best()
    b = make(runtime=rt, population=8) if make is es else make(runtime=rt)
    assert b.generation == 0
    assert b.load(path) is b
    assert b.generation == 3
    assert np.array_equal(b.ask(), nxt)
    assert np.array_equal(b.best()[0], best[0])
    assert b.best()[1] == best[1] and math.isfinite(best[1])  # the file keeps the fitness
    # ...and they go on alike.
    f = quadratic(nxt)
    a.tell(f)
    b.tell(f)
    assert np.array_equal(a.ask(), b.ask())
    # Another shape of optimiser refuses the file and is unchanged.
    c = make(runtime=rt, population=10) if make is es else make(runtime=rt, population=12)
    with pytest.raises(fastrl.Error) as ei:
        c.load(path)
    assert ei.value.status == Status.ERR_SIZE and c.generation == 0
    # Another seed too.
    d = make(runtime=fastrl.Runtime(threads=1, seed=12), **({"population": 8} if make is es
                                                              else {}))
    with pytest.raises(fastrl.Error) as ei:
        d.load(path)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    with pytest.raises(fastrl.Error) as ei:
        b.load(tmp_path / "missing.frl")
    assert ei.value.status == Status.ERR_IO and b.generation == 4


# ---------------------------------------------------------------- run() with a callback

def test_run_calls_back_and_matches_ask_tell():
    seen = []

    def fitness(params, out):
        assert params.shape == (8, N) and params.dtype == np.float32
        assert not params.flags.writeable
        assert out.shape == (8,) and out.dtype == np.float64 and np.isnan(out).all()
        seen.append(params.copy())
        out[:] = quadratic(params)

    a = es(runtime=fastrl.Runtime(threads=1, seed=2), population=8)
    params, fit = a.run(fitness, 5)
    assert a.generation == 5 and len(seen) == 5 and math.isfinite(fit)
    # The same optimiser driven by hand gives the same generations.
    b = es(runtime=fastrl.Runtime(threads=1, seed=2), population=8)
    for g in range(5):
        x = b.ask()
        assert np.array_equal(x, seen[g])
        b.tell(quadratic(x))
    assert np.array_equal(b.best()[0], params)
    # Returning the fitnesses works too; False stops early (a normal return).
    a.run(lambda x, f: quadratic(x), 2)
    assert a.generation == 7
    a.run(lambda x, f: False, 3)
    assert a.generation == 7
    kept = a.run(lambda x, f: quadratic(x), 0)  # no generation: just best()
    assert a.generation == 7 and np.array_equal(kept[0], a.best()[0])
    with pytest.raises(fastrl.Error) as ei:
        a.run(quadratic, -1)
    assert ei.value.status == Status.ERR_RANGE


def test_run_stops_on_numpy_false():
    """fitness_fn's stop computed with numpy (np.False_, not False) used to be taken
    as the fitnesses: a ValueError about shape () instead of stopping."""
    a = es(runtime=fastrl.Runtime(threads=1, seed=2), population=8)
    a.run(lambda x, f: quadratic(x), 2)

    def fitness(x, f):
        f[:] = quadratic(x)
        keep_going = np.float64(a.generation) < 3  # numpy's bool
        return None if keep_going else keep_going  # np.False_ at the fourth generation
    a.run(fitness, 10)
    assert a.generation == 3


def test_run_refuses_fitnesses_that_are_not_numbers():
    """fitness_fn's returned bools or strings were taken as numbers, where tell refuses
    them; the optimiser is then unchanged."""
    a = es(runtime=fastrl.Runtime(threads=1, seed=2), population=4)
    for bad in ([True, False, True, False], ["1", "2", "3", "4"]):
        with pytest.raises(TypeError, match="array of numbers"):
            a.run(lambda x, f: bad, 1)
        assert a.generation == 0
    a.run(lambda x, f: quadratic(x), 1)
    assert a.generation == 1


def test_close_inside_run_is_refused():
    # The run holds the optimiser's pointer across the fitness call: a close() there
    # would free it under the loop (the tell read freed memory).
    a = es(runtime=fastrl.Runtime(threads=1, seed=2), population=8)

    def closing(params, out):
        a.close()

    with pytest.raises(fastrl.Error) as ei:
        a.run(closing, 2)
    assert ei.value.status == Status.ERR_STATE and "inside run" in str(ei.value)
    assert not a.closed and a.generation == 0
    a.close()
    assert a.closed


def test_run_arrays_outlive_the_call():
    """params and fitness are numpy arrays of their own each generation: kept past the
    call (or held by a traceback, as a debugger's post-mortem holds them) they keep
    their values."""
    kept = []

    def fitness(params, out):
        kept.append((params, params.copy(), out))
        out[:] = quadratic(params)

    e = es(population=8)
    e.run(fitness, 3)
    assert len(kept) == 3 and kept[0][0] is not kept[1][0]
    for params, copy, out in kept:
        np.testing.assert_array_equal(params, copy)
        np.testing.assert_array_equal(out, quadratic(copy))

    def fails(params, out):
        raise RuntimeError("inspect me")

    with pytest.raises(RuntimeError) as ei:
        e.run(fails, 1)
    tb = ei.value.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_locals["params"].shape == (8, N)
    assert np.isfinite(tb.tb_frame.f_locals["params"]).all()


def test_run_propagates_the_callbacks_exception():
    class Boom(Exception):
        pass

    calls = []

    def fitness(params, out):
        calls.append(1)
        if len(calls) == 3:
            raise Boom("the simulator crashed")
        out[:] = quadratic(params)

    e = es(population=8)
    with pytest.raises(Boom) as ei:
        e.run(fitness, 10)
    assert ei.value.args == ("the simulator crashed",)
    assert e.generation == 2  # the third generation was not told
    notes = getattr(ei.value, "__notes__", None)
    if notes is not None:  # Python >= 3.11
        assert any("FRL_ERR_CALLBACK" in n or "callback" in n for n in notes), notes
    # A member left unfilled: the library's NaN check, as a fastrl.Error.
    with pytest.raises(fastrl.Error) as ei:
        e.run(lambda x, f: f.__setitem__(slice(0, 7), 0.0), 1)
    assert ei.value.status == Status.ERR_NONFINITE
    # A wrong shape returned is a ValueError raised through the library.
    with pytest.raises(ValueError):
        e.run(lambda x, f: np.zeros(3), 1)
    # ask/tell inside the run are refused; generation and best are readable; after the
    # run, the optimiser is usable.
    with pytest.raises(fastrl.Error) as ei:
        e.run(lambda x, f: e.ask(), 1)
    assert ei.value.status == Status.ERR_STATE and "inside run" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        e.run(lambda x, f: e.tell(quadratic(x)), 1)
    assert ei.value.status == Status.ERR_STATE
    gens = []

    def logged(x, f):
        gens.append(e.generation)
        assert np.allclose(x[0] + x[1], 2 * e.best()[0], atol=1e-6)
        return quadratic(x)

    e.run(logged, 2)
    assert gens == [2, 3] and e.generation == 4


# ---------------------------------------------------------------- populations

def test_population_parameters_are_a_zero_copy_view(cartpole):
    rt, venv, policy = cartpole
    pop = fastrl.Population(policy, 4)
    assert len(pop) == pop.members == 4
    assert 0 < pop.member_size <= policy.num_parameters
    p = pop.parameters
    assert p.shape == (4, pop.member_size) and p.dtype == np.float32 and p.flags.writeable
    assert pop.parameters is p and fastrl._owner_of(p) is pop._h
    assert np.array_equal(p[0], p[3])  # every member starts as the policy
    obs = np.random.default_rng(1).normal(size=(256, 4)).astype(np.float32)
    before1 = pop.act(obs, 1, deterministic=True)
    before0 = pop.act(obs, 0, deterministic=True)
    assert np.array_equal(before0, before1)
    p[1] = np.random.default_rng(2).normal(0, 1.0, pop.member_size)  # in place
    after1 = pop.act(obs, 1, deterministic=True)
    assert not np.array_equal(after1, before1)  # the library reads the view's memory
    assert np.array_equal(pop.act(obs, 0, deterministic=True), before0)
    # A copy is not the population.
    q = p.copy()
    q[0] = 0
    assert not np.array_equal(pop.parameters[0], q[0])


def test_population_act_equals_policy_act(cartpole):
    rt, venv, policy = cartpole
    P = 5
    pop = fastrl.Population(policy, P)
    rng = np.random.default_rng(3)
    pop.parameters[:] = pop.parameters + rng.normal(0, 0.5, pop.parameters.shape)
    obs = rng.normal(size=(300, 4)).astype(np.float32)
    members = rng.integers(0, P, 300).astype(np.int32)
    other = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                          hidden=[16], runtime=rt)
    for det in (True, False):
        acts = pop.act(obs, members, deterministic=det, counter=9, stream_offset=4)
        assert acts.shape == (300,) and acts.dtype == np.int32
        for m in range(P):
            pop.copy_to_policy(m, other)
            mine = other.act(obs, deterministic=det, counter=9, stream_offset=4)
            rows = members == m
            assert rows.any()
            assert np.array_equal(acts[rows], mine[rows]), (det, m)
    # Without a counter each call takes the next position; a refused call takes none.
    bad = obs.copy()
    bad[7, 2] = np.nan
    with pytest.raises(fastrl.Error):
        pop.act(bad, members)
    assert np.array_equal(pop.act(obs, members), pop.act(obs, members, counter=0))
    # One observation, one member: one action.
    a = pop.act(obs[0], int(members[0]), deterministic=True)
    assert isinstance(a, int) and a == pop.act(obs[:1], members[:1], deterministic=True)[0]
    # Bad members: range (named by row), shape, type.
    bad = members.copy()
    bad[17] = P
    with pytest.raises(fastrl.Error) as ei:
        pop.act(obs, bad)
    assert ei.value.status == Status.ERR_RANGE and "row 17" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        pop.act(obs, np.full(300, 2**32 + 1, np.int64))  # would wrap to 1 in int32
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error) as ei:
        pop.act(obs, members[:10])
    assert ei.value.status == Status.ERR_SIZE
    with pytest.raises(TypeError):
        pop.act(obs, members.astype(np.float32))
    with pytest.raises(fastrl.Error) as ei:
        pop.act(obs[:, :3], members)
    assert ei.value.status == Status.ERR_SIZE
    with pytest.raises(fastrl.Error) as ei:
        pop.copy_to_policy(P, other)
    assert ei.value.status == Status.ERR_RANGE
    big = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                        hidden=[32], runtime=rt)
    with pytest.raises(fastrl.Error) as ei:
        pop.copy_to_policy(0, big)
    assert ei.value.status == Status.ERR_SIZE


def test_population_evaluate_on_cartpole(cartpole):
    rt, venv, policy = cartpole
    P = 6
    pop = fastrl.Population(policy, P)
    pop.parameters[:] = pop.parameters + np.random.default_rng(4).normal(
        0, 0.5, pop.parameters.shape)
    r = pop.evaluate(venv, episodes=3, seed=1)
    returns, steps, lengths, env_steps = r
    assert returns.shape == lengths.shape == steps.shape == (P,)
    assert returns.dtype == lengths.dtype == np.float64 and steps.dtype == np.int64
    assert np.isfinite(returns).all() and (returns >= 1).all() and (returns <= 500).all()
    # CartPole pays 1 a step: a mean return is a mean length, and steps add up.
    assert np.array_equal(returns, lengths)
    assert np.allclose(steps, lengths * 3)
    assert env_steps == steps.sum()
    # Greedy and seeded: the same seed gives the same result.
    again = pop.evaluate(venv, episodes=3, seed=1)
    assert np.array_equal(again.returns, returns) and np.array_equal(again.steps, steps)
    assert len(set(returns.tolist())) > 1  # members acting differently score differently
    # A built-in id: a vec env of its own.
    own = pop.evaluate("CartPole-v1", episodes=2, num_envs=4)
    assert own.returns.shape == (P,) and np.isfinite(own.returns).all()
    # Cut episodes.
    cut = pop.evaluate(venv, episodes=2, max_episode_steps=5)
    assert (cut.lengths <= 5).all()
    with pytest.raises(fastrl.Error) as ei:
        pop.evaluate("Pendulum-v1", num_envs=2)  # another action space
    assert ei.value.status == Status.ERR_SIZE
    with pytest.raises(fastrl.Error) as ei:
        pop.evaluate(venv, episodes=0)
    assert ei.value.status == Status.ERR_RANGE


def test_es_through_a_population_learns_cartpole_a_bit(cartpole):
    rt, venv, policy = cartpole
    pop = fastrl.Population(policy, 16)
    e = fastrl.Evo(pop.parameters[0], algo="es", population=16, sigma=0.1, lr=0.05,
                   noise_floats=1 << 14, runtime=rt)
    first = None
    for g in range(15):
        e.ask(out=pop.parameters)
        res = pop.evaluate(venv, seed=g)
        first = res.returns.mean() if first is None else first
        e.tell(res.returns)
    pop.parameters[0] = e.best()[0]
    res = pop.evaluate(venv, episodes=4, seed=99)
    assert res.returns[0] > 2 * first, (first, res.returns[0])  # 17 -> 124 here


def test_population_lifetime_and_refusals(cartpole):
    rt, venv, policy = cartpole
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Population(policy, 0)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(TypeError):
        fastrl.Population("policy", 2)
    gru = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                        core="gru", runtime=rt)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Population(gru, 2)
    assert ei.value.status == Status.ERR_UNSUPPORTED
    # The view outlives the wrapper and the policy's wrapper; the C object dies with the
    # last view.
    own = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                        hidden=[8], runtime=rt)
    pop = fastrl.Population(own, 3)
    params = pop.parameters
    params[2] = 1.5
    h = weakref.ref(pop._h)
    policy_h = weakref.ref(own._h)
    pop.close()
    own.close()
    del pop, own
    collect()
    assert h() is not None and h().alive and policy_h() is not None  # the view keeps both
    touch(params)
    assert (params[2] == 1.5).all()
    del params
    collect()
    assert h() is None and policy_h() is None


def test_population_of_a_trainers_policy_waits_for_train():
    t = fastrl.Trainer("CartPole-v1", num_envs=4, rollout=16, minibatches=1, epochs=1,
                       threads=1)
    pop = fastrl.Population(t.policy, 2)
    seen = []

    def cb(m):
        with pytest.raises(fastrl.Error) as ei:
            pop.act(np.zeros((1, 4), np.float32), 0)
        seen.append(ei.value.status)
        return False

    t.train(64, cb)
    assert seen == [Status.ERR_STATE]
    assert pop.act(np.zeros((2, 4), np.float32), [0, 1]).shape == (2,)
    m = t.metrics
    assert m.population_mean == m.population_best == m.kept_fitness == 0.0  # PPO
    del t
    gc.collect()
    pop.act(np.zeros((1, 4), np.float32), 1)  # the population keeps the trainer's policy


def test_trainer_short_names_resolve_by_algorithm(tmp_path):
    # The doc's example: "lr" is es.lr where algo="es". The options went through the
    # runtime's sorting first, which resolved "lr" without the algorithm: train.lr was
    # set to 0.05 and ES ran with its default es.lr.
    t = fastrl.Trainer("CartPole-v1", algo="es", population=16, lr=0.05, threads=1)
    t.set_output(tmp_path)
    settings = (tmp_path / "settings.txt").read_text().splitlines()
    assert "es.lr=0.050000000000000003" in settings
    assert "train.lr=0.050000000000000003" not in settings


def test_trainer_es_metrics_and_short_names():
    # train.algo=es in a Trainer: the population sampler and the three metrics frl_metrics
    # gained in 0.3; short names resolve inside es.* since the algorithm is ES.
    t = fastrl.Trainer("CartPole-v1", algo="es", population=16, sigma=0.1,
                       noise_floats=1 << 14, threads=2, seed=3)
    m = t.train(3000)
    assert m.update >= 2 and m.episodes == 16 * m.update  # one episode per member
    assert 1 <= m.population_mean <= m.population_best <= 500
    assert m.kept_fitness == pytest.approx(m.population_mean)  # ES keeps the centre
    assert set(m.as_dict()) >= {"population_mean", "population_best", "kept_fitness"}
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer("CartPole-v1", population=16)  # PPO: es.* or ga.*?
    assert ei.value.status == Status.ERR_UNKNOWN_NAME and "ga.population" in ei.value.message


def test_population_act_of_one_observation_says_it_takes_one_member(cartpole):
    # one observation with a members array: the error said "members of shape (1,);
    # expected (1,)", refusing what it asked for
    rt, venv, policy = cartpole
    pop = fastrl.Population(policy, 2)
    obs = np.zeros(venv.single_observation_space.shape, np.float32)
    assert pop.act(obs, 1, deterministic=True) in (0, 1)
    with pytest.raises(fastrl.Error) as ei:
        pop.act(obs, np.array([1]))
    assert ei.value.status == Status.ERR_SIZE
    assert "one int" in ei.value.message and "expected (1,)" not in ei.value.message


def test_a_close_while_the_arguments_convert_waits_for_the_call(tmp_path, monkeypatch):
    """tell, rebuild and run converted their arrays (a user's __array__), and save and
    load their paths (__fspath__), after taking the pointer: a close() there freed the
    optimiser under the call. The arrays' calls now finish on the held optimiser; the
    paths are converted first, so the call finds it closed."""
    L = fastrl._lib.lib()
    live = [None]
    seen = []

    def spy(name):
        orig = getattr(L, name)

        def call(ptr, *args):
            h = live[0]()
            seen.append(name)
            # (freed: calling the library would corrupt the heap)
            assert h is not None and h.alive, f"{name} on a destroyed optimiser"
            return orig(ptr, *args)
        monkeypatch.setattr(L, name, call)

    for name in ("evo_tell", "evo_rebuild", "evo_save", "evo_load"):
        spy(name)

    class Closing:
        def __init__(self, obj, value):
            self.obj, self.value = obj, value

        def __array__(self, dtype=None, copy=None):
            self.obj.close()
            gc.collect()
            return np.asarray(self.value, dtype)

        def __fspath__(self):
            self.obj.close()
            gc.collect()
            return str(self.value)

    def fresh(make):
        e = make(runtime=fastrl.Runtime(threads=1, seed=5))
        live[0] = weakref.ref(e._h)
        return e

    e = fresh(es)
    e.ask()
    e.tell(Closing(e, np.arange(e.population, dtype=np.float64)))
    assert e.closed
    e = fresh(ga)
    e.ask()
    e.tell(np.arange(e.population, dtype=np.float64))
    assert e.rebuild(Closing(e, np.array([1, 2], np.uint64))).shape == (N,)
    for method in ("save", "load"):
        e = fresh(ga)
        with pytest.raises(fastrl.Error) as ei:
            getattr(e, method)(Closing(e, tmp_path / "evo.frl"))
        assert ei.value.status == Status.ERR_STATE
    e = fresh(es)
    with pytest.raises(fastrl.Error) as ei:  # the tell runs; the next generation refuses
        e.run(lambda x, f: Closing(e, quadratic(x)), 3)
    assert ei.value.status == Status.ERR_STATE
    collect()
    assert seen == ["evo_tell", "evo_tell", "evo_rebuild", "evo_tell"]  # GA: a tell first
