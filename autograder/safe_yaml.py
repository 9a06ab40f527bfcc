"""YAML from uploads (an autograder zip's environment.yml, a master notebook's ASSIGNMENT CONFIG), read so that
its size bounds the work: yaml.safe_load accepts aliases, and a document of a few hundred bytes whose aliases
refer to aliases ("billion laughs") becomes a structure that takes forever to walk. Neither file needs them."""

from __future__ import annotations

from typing import Any

import yaml

MAX_YAML_CHARS = 128 * 1024
MAX_YAML_DEPTH = 50


class _Loader(yaml.SafeLoader):
    """SafeLoader without aliases, and with a bounded nesting (the composer recurses)."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + 1
            raise ValueError(f"uses a YAML alias (a '*name', line {line}): write the value out instead")
        if self.depth >= MAX_YAML_DEPTH:
            raise ValueError(f"is nested more than {MAX_YAML_DEPTH} levels deep")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_yaml(text: str) -> Any:
    """The document in `text`; ValueError whose message completes a sentence about it ("... is not valid YAML")."""
    if len(text) > MAX_YAML_CHARS:
        raise ValueError(f"is longer than {MAX_YAML_CHARS} characters")
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as error:
        raise ValueError(f"is not valid YAML: {error}") from None
