"""The old name of ``loopgraphs.nodes.driver`` (node logic and the nodes made from it)."""

from loopgraphs.deprecation import moved
from loopgraphs.nodes import driver

moved(__name__, driver)
