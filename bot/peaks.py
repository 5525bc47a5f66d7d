"""Peak memory bandwidth of known devices, for the "fraction of speed of light" in reports: the core's
(``leaderboards.peaks``, shared with the web API), re-exported for the bot."""

from __future__ import annotations

from leaderboards.peaks import DATASHEET_BANDWIDTH as DATASHEET_BANDWIDTH
from leaderboards.peaks import parse_peaks as parse_peaks
from leaderboards.peaks import peak_lookup as peak_lookup
