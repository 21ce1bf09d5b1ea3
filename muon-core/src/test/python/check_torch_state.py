"""Checks a file written by MuonAdamW.exportTorchStateDict with Python's torch, then writes one back.

Run by dev.muon.TorchStatePythonTest:
    check_torch_state.py EXPORTED EXPECTED_JSON OUT

EXPORTED      the file Java exported
EXPECTED_JSON what Java says is in it: names, shapes, every state tensor's values, the groups' lrs
OUT           where to torch.save a state dict of the same layout, made from torch.optim.AdamW's own
              state_dict() after load_state_dict, with known changes that Java then checks on import

Exits non-zero with a message on the first mismatch.
"""
import copy
import json
import pickletools
import sys
import zipfile

import torch

# torch.optim.Muon's group keys, and ours: muon_core_settings holds the settings Muon has no key for (its
# load_state_dict keeps an extra group key, and its step never reads it).
MUON_GROUP_KEYS = {"lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps",
                   "adjust_lr_fn", "params", "muon_core_settings"}
ADAMW_GROUP_KEYS = {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
                    "differentiable", "fused", "decoupled_weight_decay", "params"}


# What PyTorch's weights-only reader (torch.load(..., weights_only=True), the default from 2.6) runs: the opcodes of
# torch/_weights_only_unpickler.py in PyTorch 2.x, and the globals a state dict of tensors needs from its allow-list.
WEIGHTS_ONLY_OPCODES = {"PROTO", "STOP", "MARK", "GLOBAL", "REDUCE", "BUILD", "NEWOBJ", "APPEND", "APPENDS",
                        "SETITEM", "SETITEMS", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE",
                        "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "BININT", "BININT1", "BININT2",
                        "BINFLOAT", "BINUNICODE", "SHORT_BINSTRING", "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT",
                        "LONG_BINPUT", "LONG1"}
WEIGHTS_ONLY_GLOBALS = {"torch._utils _rebuild_tensor_v2", "collections OrderedDict", "torch FloatStorage",
                        "torch DoubleStorage", "torch HalfStorage", "torch BFloat16Storage", "torch LongStorage"}


def load_weights_only(path):
    """torch.load(path, weights_only=True); on PyTorch 1.x, whose weights-only reader has no BINFLOAT (so it
    refuses even its own optimizers' state dicts), the pickle is checked against PyTorch 2.x's allow-list instead."""
    try:
        sd = torch.load(path, weights_only=True)
        print("check_torch_state: torch.load(weights_only=True) read the file")
        return sd
    except Exception as e:  # noqa: BLE001 - any refusal is inspected below
        if not (torch.__version__.startswith("1.") and "Unsupported operand 71" in str(e)):
            fail(f"torch.load(weights_only=True) refused the file: {e}")
    with zipfile.ZipFile(path) as z:
        pickle = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    for op, arg, _ in pickletools.genops(pickle):
        check(op.name in WEIGHTS_ONLY_OPCODES, f"the pickle uses {op.name}, which weights_only does not run")
        if op.name == "GLOBAL":
            check(arg in WEIGHTS_ONLY_GLOBALS, f"the pickle asks for the global {arg!r}, outside weights_only's list")
    print(f"check_torch_state: PyTorch {torch.__version__}'s weights-only reader lacks BINFLOAT; the pickle uses "
          "only the opcodes and globals of PyTorch 2.x's")
    return torch.load(path)


def fail(message):
    print("check_torch_state: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def same(tensor, values, shape, what):
    """Bit-exact: Java wrote each float32 as the decimal of its exact double value."""
    check(isinstance(tensor, torch.Tensor), f"{what} is not a tensor but {type(tensor).__name__}")
    check(tensor.dtype == torch.float32, f"{what} has dtype {tensor.dtype}, expected float32")
    check(list(tensor.shape) == shape, f"{what} has shape {list(tensor.shape)}, expected {shape}")
    expected = torch.tensor(values, dtype=torch.float64).to(torch.float32).reshape(shape)
    check(torch.equal(tensor, expected), f"{what} differs from Java's values")


def main(exported_path, expected_path, out_path):
    with open(expected_path) as f:
        expected = json.load(f)
    # weights_only: PyTorch's safe reader (the default from 2.6) must accept what Java exports.
    sd = load_weights_only(exported_path)
    check(isinstance(sd, dict), f"the file holds a {type(sd).__name__}, not a dict")
    check(set(sd) == {"format", "param_names", "step", "muon", "adamw"}, f"top-level keys {sorted(sd)}")
    check(sd["format"] == "dev.muon.torch_state_dict/1", f"format {sd['format']!r}")
    names = sd["param_names"]
    check(names == expected["param_names"], f"param_names {names}")
    check(sd["step"] == expected["step"], f"step {sd['step']}")
    shapes = expected["shapes"]

    # The Muon part: torch.optim.Muon's state_dict layout (Python 1.13 has no Muon to load it into).
    muon = sd["muon"]
    check(set(muon) == {"state", "param_groups"}, f"muon keys {sorted(muon)}")
    check(len(muon["param_groups"]) == 1, f"{len(muon['param_groups'])} Muon groups")
    group = muon["param_groups"][0]
    check(set(group) == MUON_GROUP_KEYS, f"Muon group keys {sorted(group)}")
    check(group["ns_coefficients"] == (3.4445, -4.775, 2.0315), f"ns_coefficients {group['ns_coefficients']}")
    check(group["ns_steps"] == 5 and group["nesterov"] is True and group["adjust_lr_fn"] == "original",
          f"Muon group {group}")
    check(group["lr"] == expected["muon_lr"], f"Muon lr {group['lr']}")
    settings = group["muon_core_settings"]
    check(isinstance(settings, dict) and settings and all(isinstance(k, str) for k in settings)
          and all(v is None or isinstance(v, (str, bool, int, float)) for v in settings.values()),
          f"muon_core_settings {settings!r}: expected a dict of names to plain values")
    check([names[i] for i in group["params"]] == list(expected["muon"]), f"Muon params {group['params']}")
    check(set(muon["state"]) == set(group["params"]), f"Muon state ids {sorted(muon['state'])}")
    for i in group["params"]:
        name = names[i]
        check(set(muon["state"][i]) == {"momentum_buffer"}, f"Muon state keys of {name}")
        same(muon["state"][i]["momentum_buffer"], expected["muon"][name], shapes[name], f"{name} momentum_buffer")

    # The AdamW part goes into torch.optim.AdamW itself, on parameters of the same shapes.
    adamw_sd = sd["adamw"]
    for g in adamw_sd["param_groups"]:
        check(set(g) == ADAMW_GROUP_KEYS, f"AdamW group keys {sorted(g)}")
    groups = [{"params": [torch.zeros(shapes[names[i]], requires_grad=True) for i in g["params"]]}
              for g in adamw_sd["param_groups"]]
    by_param = {}
    for g, saved in zip(groups, adamw_sd["param_groups"]):
        for p, i in zip(g["params"], saved["params"]):
            by_param[p] = names[i]
    opt = torch.optim.AdamW(groups, lr=1.0)
    opt.load_state_dict(adamw_sd)
    check(opt.param_groups[0]["lr"] == expected["adamw_lr"], f"AdamW lr {opt.param_groups[0]['lr']}")
    check(opt.param_groups[0]["betas"] == (0.9, 0.999), f"AdamW betas {opt.param_groups[0]['betas']}")
    check(len(opt.state) == len(expected["adamw"]), f"AdamW holds state for {len(opt.state)} parameters")
    for p, name in by_param.items():
        state = opt.state[p]
        want = expected["adamw"][name]
        same(state["exp_avg"], want["exp_avg"], shapes[name], f"{name} exp_avg")
        same(state["exp_avg_sq"], want["exp_avg_sq"], shapes[name], f"{name} exp_avg_sq")
        step = state["step"]
        check(torch.is_tensor(step) and step.dtype == torch.float32 and step.dim() == 0,
              f"{name} step is {step!r}, expected a float32 scalar tensor")
        check(step.item() == want["step"], f"{name} step {step.item()}, expected {want['step']}")

    # The loaded state must be usable: one step (on a copy) runs.
    stepped = torch.optim.AdamW(copy.deepcopy(groups), lr=1.0)
    stepped.load_state_dict(adamw_sd)
    for g in stepped.param_groups:
        for p in g["params"]:
            p.grad = torch.ones_like(p)
    stepped.step()

    # Back to Java: AdamW's own state_dict (its ids from 0), Muon's renumbered the same way, known changes.
    for p in by_param:
        opt.state[p]["exp_avg"].mul_(2)
        opt.state[p]["step"].add_(1)
    for g in opt.param_groups:
        g["lr"] = 0.004
    muon_out = {"state": {}, "param_groups": [dict(group, lr=0.03, params=list(range(len(group["params"]))))]}
    for new_id, i in enumerate(group["params"]):
        muon_out["state"][new_id] = {"momentum_buffer": muon["state"][i]["momentum_buffer"] * 2}
    torch.save({"param_names": names, "step": 11, "muon": muon_out, "adamw": opt.state_dict()}, out_path)
    print("check_torch_state: ok, torch " + torch.__version__)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail("usage: check_torch_state.py EXPORTED EXPECTED_JSON OUT")
    main(sys.argv[1], sys.argv[2], sys.argv[3])
