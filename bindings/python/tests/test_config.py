"""Config: dict-like access, types, validation, help, errors."""

import math

import numpy as np
import pytest

import fastrl
from fastrl import Status


def test_every_key_listed_with_help():
    keys = fastrl.config_keys()
    names = [k.name for k in keys]
    assert len(names) >= 28 and len(set(names)) == len(names)  # 28 in 0.2.0
    # The table's order: the env.* rows first (env.frame_skip leads them since 0.3).
    assert names[0] == "env.frame_skip" and "env.max_episode_steps" in names
    assert "train.lr" in names
    for k in keys:
        assert k.help and k.type in ("int", "float", "bool", "choice", "int_list")
    act = fastrl.describe("policy.activation")
    assert act.type == "choice" and act.choices == ("tanh", "relu", "elu")
    lr = fastrl.describe("train.lr")
    assert (lr.type, lr.default, lr.min, lr.max) == ("float", "2.5e-4", 0.0, 10.0)
    text = fastrl.Config.help()
    assert len(text.splitlines()) == len(keys)
    assert "train.lr (float, default 2.5e-4, [0, 10]): Adam learning rate" in text


def test_mapping_reads_defaults_and_typed_values():
    c = fastrl.Config()
    assert len(c) == len(fastrl.config_keys()) and "train.lr" in c and "nope" not in c
    assert list(c) == [k.name for k in fastrl.config_keys()]
    assert c["train.lr"] == 2.5e-4 and isinstance(c["train.num_envs"], int)
    assert c["train.anneal_lr"] is True
    assert c["policy.activation"] == "tanh"
    assert c["policy.hidden"] == (64, 64)
    assert c["train.target_return"] is None and c["train.target_kl"] is None
    assert c.set_keys() == [] and c.to_dict() == {}
    assert len(c.to_dict(all=True)) == len(c)


def test_set_get_unset_every_type():
    c = fastrl.Config()
    c["train.num_envs"] = 32
    c["train.lr"] = 1e-3
    c["train.gamma"] = 1  # an int is accepted on a float key
    c["policy.obs_norm"] = True
    c["policy.activation"] = "relu"
    c["policy.hidden"] = [32, 16, 8]
    c["train.target_return"] = np.float64(475)
    c["train.epochs"] = np.int64(3)
    c["train.clip"] = "0.1"  # text goes through the library's parser
    assert c["train.num_envs"] == 32 and c["train.lr"] == 1e-3 and c["train.gamma"] == 1.0
    assert c["policy.obs_norm"] is True and c["policy.activation"] == "relu"
    assert c["policy.hidden"] == (32, 16, 8) and c["train.target_return"] == 475.0
    assert c["train.epochs"] == 3 and c["train.clip"] == 0.1
    assert c.is_set("train.lr") and not c.is_set("train.ent_coef")
    c["policy.hidden"] = []
    assert c["policy.hidden"] == ()
    del c["train.lr"]
    c["train.target_return"] = None
    assert c["train.lr"] == 2.5e-4 and c["train.target_return"] is None
    assert "train.lr" not in c.set_keys()


def test_constructors_short_names_and_text():
    a = fastrl.Config({"train.lr": 1e-3}, num_envs=4, hidden=[8])
    assert a.to_dict() == {"policy.hidden": (8,), "train.lr": 1e-3, "train.num_envs": 4}
    b = fastrl.Config("train.lr=1e-3 train.num_envs=4 policy.hidden=8")
    assert a == b and a != fastrl.Config()
    c = a.copy()
    c["train.lr"] = 0.5
    assert a["train.lr"] == 1e-3  # copies are independent
    assert "train.lr" in repr(a)
    assert fastrl.Config(a) == a


@pytest.mark.parametrize("key, value, status", [
    ("train.lr", -1.0, Status.ERR_RANGE),
    ("train.lr", math.nan, Status.ERR_NONFINITE),
    ("train.lr", math.inf, Status.ERR_NONFINITE),
    ("train.num_envs", 0, Status.ERR_RANGE),
    ("train.num_envs", 2.5, Status.ERR_TYPE),
    ("train.num_envs", "many", Status.ERR_PARSE),
    ("train.num_envs", 2**70, Status.ERR_RANGE),
    ("policy.activation", "sigmoid", Status.ERR_UNKNOWN_NAME),
    ("policy.hidden", [64, 0], Status.ERR_RANGE),
    ("policy.hidden", [1] * 9, Status.ERR_PARSE),
    ("policy.hidden", [64, 1.5], Status.ERR_TYPE),
    ("train.nope", 1, Status.ERR_UNKNOWN_NAME),
    ("train.anneal_lr", "maybe", Status.ERR_PARSE),
    # a sequence is an int list's value only: joined as text, (8,) set num_envs to 8
    ("train.num_envs", (8,), Status.ERR_TYPE),
    ("train.lr", [1], Status.ERR_TYPE),
    ("train.anneal_lr", [0], Status.ERR_TYPE),
    ("policy.activation", np.array([], np.int64), Status.ERR_TYPE),
])
def test_bad_values_raise_and_change_nothing(key, value, status):
    c = fastrl.Config(lr=1e-3)
    before = c.to_dict()
    with pytest.raises(fastrl.Error) as ei:
        c[key] = value
    assert ei.value.status == status, ei.value
    assert ei.value.message
    assert c.to_dict() == before


@pytest.mark.parametrize("key, value, status, says", [
    ("train.lr", 10**400, Status.ERR_RANGE,
     "1.000000e+400 does not fit in a double (a float key, in [0, 10])"),
    ("train.lr", -10**400, Status.ERR_RANGE, "-1.000000e+400 does not fit in a double"),
    ("train.lr", 2**70, Status.ERR_RANGE, "1.1805916207174113e+21 is outside [0, 10]"),
    ("train.num_envs", 2**64, Status.ERR_RANGE, "18446744073709551616 does not fit in int64 "
     "(an int key, in [1, 1048576])"),
    ("policy.activation", 2**64, Status.ERR_TYPE, "is of type choice, not int"),
    ("policy.hidden", 2**64, Status.ERR_TYPE, "is of type int list, not int"),
    ("train.nope", 2**64, Status.ERR_UNKNOWN_NAME, "unknown config key 'train.nope'"),
], ids=["float-huge", "float-huge-negative", "float-out-of-range", "int", "choice",
        "int-list", "unknown"])
def test_ints_beyond_int64_are_named_by_the_keys_type(key, value, status, says):
    """An int too large for the library's int setter: a float key takes it as a double
    (the library checks its range); otherwise the message gives the key's own type."""
    c = fastrl.Config()
    with pytest.raises(fastrl.Error) as ei:
        c[key] = value
    assert ei.value.status == status and says in ei.value.message, ei.value
    assert "int64" not in ei.value.message or key == "train.num_envs"
    assert str(value) not in ei.value.message or abs(value) < 10**24  # long: abbreviated
    assert c.to_dict() == {}  # nothing changed
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Config(lr=10**400)
    assert "double" in ei.value.message and "int64" not in ei.value.message


def test_unknown_key_message_lists_the_namespace():
    c = fastrl.Config()
    with pytest.raises(fastrl.Error) as ei:
        c["train.learning_rate"]
    assert ei.value.status == Status.ERR_UNKNOWN_NAME and "train.lr" in ei.value.message
    assert ei.value.message.count("unknown config key") == 1  # said once, by the library
    with pytest.raises(fastrl.Error):
        del c["nope.x"]
    with pytest.raises(TypeError):
        c["train.lr"] = {"a": 1}
    with pytest.raises(fastrl.Error) as ei:
        c["train.lr"] = "1e-3\0"
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT


def test_update_and_parse_are_all_or_nothing():
    c = fastrl.Config(lr=1e-3)
    with pytest.raises(fastrl.Error):
        c.update({"train.num_envs": 8, "train.clip": -5.0})
    assert c.to_dict() == {"train.lr": 1e-3}
    with pytest.raises(fastrl.Error) as ei:
        c.parse("train.num_envs=8 train.clip=oops")
    assert "train.clip" in ei.value.message and c.to_dict() == {"train.lr": 1e-3}
    c.update(num_envs=8)
    assert c["train.num_envs"] == 8


def test_short_option_names():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Config(no_such_option=1)
    assert ei.value.status == Status.ERR_UNKNOWN_NAME and "config_keys" in ei.value.message
    with pytest.raises(TypeError):
        fastrl.Config(42)


@pytest.mark.parametrize("call", [
    lambda c: c.__setitem__("train.algo", b"dqn\0ppo"),
    lambda c: c.__setitem__(b"train.lr\0junk", 0.5),
    lambda c: c.parse(b"train.lr=0.25\0 train.gamma=2"),
    lambda c: c.__delitem__(b"train.lr\0junk"),
    lambda c: fastrl.make(b"CartPole-v1\0x".decode()),
])
def test_bytes_with_a_nul_are_refused_as_str_is(call):
    """A NUL ends the C string: bytes holding one used to reach the library cut short
    (b"dqn\\0ppo" set train.algo to dqn, a key b"train.lr\\0junk" set train.lr), while
    the same str was refused. Both are refused now, and nothing changes."""
    c = fastrl.Config({"train.lr": 1e-3})
    with pytest.raises(fastrl.Error) as ei:
        call(c)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    assert "NUL" in ei.value.message
    assert c.to_dict() == {"train.lr": 1e-3}


def test_a_key_as_bytes_reads_what_it_set():
    """Setting and unsetting took bytes keys, reading said the same key was unknown
    (cfg[b"train.lr"] after cfg[b"train.lr"] = 0.5). Now every access takes them as
    their UTF-8 text; bytes that are not UTF-8 are an unknown key, a NUL is refused."""
    c = fastrl.Config()
    c[b"train.lr"] = 0.5
    assert c[b"train.lr"] == 0.5 and c.get(b"train.lr") == 0.5
    assert b"train.lr" in c and b"\xff" not in c and b"nope" not in c
    with pytest.raises(fastrl.Error) as ei:
        c[b"\xff"]
    assert ei.value.status == Status.ERR_UNKNOWN_NAME
    with pytest.raises(fastrl.Error) as ei:
        c[b"train.lr\0x"]
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    with pytest.raises(TypeError):
        c[3]
    # is_set and describe took only str: "unknown config key b'train.lr'"
    assert c.is_set(b"train.lr") and c.describe(b"train.lr").name == "train.lr"
    assert fastrl.config.describe(b"train.lr").name == "train.lr"


def test_unknown_keys_are_key_errors_to_the_mapping_methods():
    """An unknown key raised Error only, so get(key, default) and pop(key, default),
    which a MutableMapping answers with the default, raised instead. The Error is now
    also a KeyError; known keys read and unset as before."""
    c = fastrl.Config({"train.lr": 0.01})
    assert c.get("train.nope", "dflt") == "dflt" and c.pop("train.nope", None) is None
    with pytest.raises(KeyError):
        c["train.nope"]
    with pytest.raises(fastrl.Error) as ei:
        del c["train.nope"]
    assert isinstance(ei.value, KeyError) and ei.value.status == Status.ERR_UNKNOWN_NAME
    assert "unknown config key" in str(ei.value)  # the library's message, not KeyError's
    assert c.pop("train.lr") == 0.01 and not c.is_set("train.lr")


def test_update_from_a_config_takes_its_set_keys():
    """update(other_config) read other's items(), which are every key with its default,
    so all 114 keys became set: equal settings compared unequal, and a Trainer on a
    built-in lost the env's own settings (CartPole's 16 envs became the default 8)."""
    base = fastrl.Config(lr=1e-3)
    cfg = fastrl.Config(gamma=0.9)
    cfg.update(base)
    assert set(cfg.set_keys()) == {"train.lr", "train.gamma"}
    assert cfg["train.lr"] == 1e-3 and cfg["train.gamma"] == 0.9
    same = fastrl.Config()
    same.update(base)
    assert same == base
    t_base = fastrl.Trainer("CartPole-v1", config=base, threads=1)
    t_same = fastrl.Trainer("CartPole-v1", config=same, threads=1)
    assert t_same.vec_env.num_envs == t_base.vec_env.num_envs
    # an unset key of other does not unset one here; a failure changes nothing
    cfg.update(fastrl.Config())
    assert set(cfg.set_keys()) == {"train.lr", "train.gamma"}


def test_clear_and_popitem_unset_the_set_keys():
    """MutableMapping's clear() popped the first key of iteration until a KeyError, but
    every key is always there (unsetting one leaves its default): clear() never
    returned, and popitem() gave ('env.frame_skip', 0) each time, unsetting nothing."""
    c = fastrl.Config(lr=1e-3, num_envs=4)
    assert c.popitem() == ("train.lr", 1e-3)
    assert c.set_keys() == ["train.num_envs"] and c["train.lr"] == 2.5e-4
    c["policy.hidden"] = [8]
    c.clear()
    assert c.set_keys() == [] and c == fastrl.Config()
    with pytest.raises(KeyError):
        c.popitem()
    c.clear()  # nothing set: nothing to do


@pytest.mark.parametrize("make", [
    lambda o: fastrl.Config(**o),
    lambda o: fastrl.Config().update(**o),
    lambda o: fastrl.config.as_config(None, o),
    lambda o: fastrl.Runtime(**o),
    lambda o: fastrl.Trainer("CartPole-v1", threads=1, **o),
], ids=["Config", "update", "as_config", "Runtime", "Trainer"])
@pytest.mark.parametrize("options", [
    {"lr": 1e-3, "train.lr": 5e-4},
    {"seed": 1, "runtime.seed": 2},
], ids=["train.lr", "runtime.seed"])
def test_two_names_of_one_key_are_refused(make, options):
    """lr= and **{"train.lr": ...} resolved into one dict entry: one value was dropped
    without a word, which one by the order the keywords came in."""
    with pytest.raises(fastrl.Error) as ei:
        make(options)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT, ei.value
    key = "train.lr" if "lr" in options else "runtime.seed"
    assert f"both set {key}" in ei.value.message
    if key == "train.lr":  # where algo="es" makes "lr" es.lr, es.lr is its other name
        with pytest.raises(fastrl.Error) as ei:
            fastrl.Evo(np.zeros(2, np.float32), algo="es", lr=0.1, **{"es.lr": 0.2})
        assert "both set es.lr" in ei.value.message
