"""How the app looks: big type and controls for a technician in a bright room wearing gloves, and one
colour per verdict, always shown next to the verdict's word (never colour alone)."""

from __future__ import annotations

from nodeqc.report.answer import COLOURS  # the app's colours are the printed summary's (nodeqc.report.printable)
from nodeqc.core.model import Verdict

BASE_POINT_SIZE = 11
BUTTON_MIN_HEIGHT = 52  # big enough to hit with a gloved finger
# A crash cart's screen (1024x768, 1024x600): the window is "compact" below these, and its node
# panel and banner take smaller type (the rules with [compact="true"]) so the answer fits unscrolled.
COMPACT_BELOW_WIDTH = 1200
COMPACT_BELOW_HEIGHT = 700


def state_of(verdict: Verdict | None) -> str:
    return verdict.value if verdict is not None else "idle"


def badge_css(state: str) -> str:
    background, text = COLOURS[state]
    return f"background: {background}; color: {text}; border-radius: 4px; padding: 2px 8px; font-weight: bold;"


# Widgets pick their colours from a dynamic `state` property, so one sheet styles every tile and banner.
STYLESHEET = f"""
QWidget {{ font-size: {BASE_POINT_SIZE}pt; }}
QPushButton {{ min-height: {BUTTON_MIN_HEIGHT}px; padding: 0 18px; font-size: 14pt; font-weight: bold; }}
QPushButton#start {{ background: #1b7f2a; color: white; border-radius: 6px; }}
QPushButton#start:disabled {{ background: #9db8a1; color: #eef2ee; }}
QPushButton#abort {{ background: #c4161c; color: white; border-radius: 6px; }}
QPushButton#abort:disabled {{ background: #d6a3a5; color: #f6eaea; }}
QComboBox, QLineEdit {{ min-height: 40px; font-size: 13pt; }}
QTabBar::tab {{ min-height: 40px; min-width: 110px; font-size: 13pt; padding: 0 14px; }}
QFrame#tile {{ border: 3px solid #b8bec6; border-radius: 8px; background: #ffffff; }}
{"".join(f'QFrame#tile[state="{s}"] {{ border-color: {bg}; }}' for s, (bg, _) in COLOURS.items() if s != "idle")}
{"".join(f'QFrame#banner[state="{s}"] {{ background: {bg}; }} QFrame#banner[state="{s}"] QLabel {{ color: {fg}; }}'
         for s, (bg, fg) in COLOURS.items())}
QFrame#banner {{ border-radius: 8px; }}
QScrollArea#bannerScroll, QScrollArea#bannerScroll > QWidget > QWidget#bannerInner {{ background: transparent; }}
QLabel#bannerWord {{ font-size: 34pt; font-weight: bold; }}
QLabel#bannerText {{ font-size: 13pt; }}
QLabel#bannerReport {{ font-size: 10pt; }}
QFrame#banner QPushButton {{ min-height: 42px; font-size: 12pt; }}
QPushButton#notices {{ min-height: 26px; font-size: 12pt; }}
QLabel#simulated {{ background: #f2b705; color: black; font-weight: bold; padding: 4px 10px; border-radius: 4px; }}
QLabel#fieldName {{ color: #444b55; padding-right: 2px; }}
QLabel#fieldValue {{ font-weight: bold; font-size: 13pt; }}
QMainWindow[compact="true"] QLabel#fieldValue {{ font-size: 11pt; }}
QMainWindow[compact="true"] QLabel#bannerWord {{ font-size: 26pt; }}
QMainWindow[compact="true"] QLabel#bannerText {{ font-size: 11pt; }}
QMainWindow[compact="true"] QLabel#bannerFindings {{ font-size: 10pt; }}
QMainWindow[compact="true"] QFrame#banner QPushButton {{ font-size: 11pt; padding: 0 10px; }}
"""
