"""Every generator module has a layer in .importlinter, so `lint-imports` checks all of them."""
from __future__ import annotations

import configparser
import pkgutil

from conftest import ROOT

import generator


def test_every_generator_module_is_in_a_layer() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter", encoding="utf-8")
    layers = config["importlinter:contract:generator-layers"]["layers"]
    declared = {name.strip() for line in layers.splitlines() for name in line.replace("|", ":").split(":")}
    modules = {f"generator.{m.name}" for m in pkgutil.iter_modules(generator.__path__) if m.name != "__main__"}
    assert modules - declared == set(), "add these to a layer of .importlinter"
    assert declared - {""} <= modules, "layers name modules that do not exist"
