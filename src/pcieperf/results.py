"""Result objects: what every API function returns and every CLI command prints.

A result holds the JSON a command prints (`to_json`: the contract, keys with their units in
their names), a table for people (`to_text`), a pandas DataFrame of the same rows
(`to_frame`), and renders itself in Jupyter (`_repr_html_`). The CLI only chooses which of
these to print (`--format table|json|csv`), so the API and the CLI cannot disagree.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, TypeVar

from pcieperf.text import format_table

if TYPE_CHECKING:
    import pandas

T = TypeVar("T")


class Result(Protocol):
    """What the CLI prints and a notebook shows."""

    def to_json(self) -> object:
        """The JSON the CLI prints (`--format json`)."""

    def to_text(self) -> str:
        """The table the CLI prints (`--format table`)."""

    def to_frame(self) -> pandas.DataFrame:
        """The JSON's rows as a DataFrame (`--format csv` prints the same rows)."""

    def to_columns(self) -> dict[str, Sequence[object]]:
        """The JSON's rows as columns, key -> one value per row (what `sweep` stores)."""

    def to_csv(self) -> str:
        """The DataFrame's rows as CSV (`--format csv`)."""


@dataclass(frozen=True)
class Column:
    """One column of a text table: its JSON key and its header, with the unit."""

    key: str
    header: str


@dataclass(frozen=True)
class Columnar:
    """Rows kept as the model computed them: equally long columns (lists or numpy arrays) of
    scalars or lists, JSON key -> one value per row. Per-row dicts are built only when the JSON
    or the text is asked for; a caller that wants columns (`to_columns`, `to_frame`: a sweep of
    millions of points, a notebook) gets them without."""

    values: Mapping[str, Sequence[object]]

    def rows(self) -> list[dict]:
        """One dict per row, values as Python scalars (numpy's as `tolist` gives them)."""
        names = list(self.values)
        cells = [as_list(column) for column in self.values.values()]
        return [dict(zip(names, row, strict=True)) for row in zip(*cells, strict=True)]


def as_list(column: Sequence[object]) -> list:
    """A column as a list of Python values (a numpy array through `tolist`)."""
    to_list = getattr(column, "tolist", None)
    return to_list() if to_list is not None else list(column)


def columns_of_rows(rows: Sequence[Mapping[str, object]]) -> dict[str, Sequence[object]]:
    """Rows (dicts, keys may differ) as columns; a key a row lacks is None (null) there."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: [row.get(k) for row in rows] for k in keys}


def _rows_of(data: object) -> list:
    """A result's JSON as a list of rows: its rows, or the one object."""
    return data if isinstance(data, list) else [data]


@dataclass(frozen=True)
class Table:
    """A result that is rows (a list of dicts, or `Columnar`) or one object, shown as a text
    table of `columns`, with a line above (`title`), one below (`footer`) and further tables
    after it (`details`). The text shows `text_rows` where they differ from the JSON's rows
    (an object shown as a list, or columns only the text shows). `optional` names the keys of
    columns the text leaves out first, least wanted first, where the table is wider than the
    terminal (`text.format_table`; a line says which were left out). `expand` as `json_rows`
    takes it: False where the data is one observation whose list of objects is its parts (a
    forwarding estimate's terms), so the DataFrame is one row. `empty` is what the text says
    in place of a table without rows (what to run to make some)."""

    data: object
    columns: Sequence[Column]
    title: str = ""
    footer: str = ""
    text_rows: Sequence[dict] | Columnar | None = None
    details: Sequence[Table] = ()
    optional: Sequence[str] = ()
    expand: bool = True
    empty: str = ""

    @cached_property
    def _json(self) -> object:
        """The JSON, built once: columnar rows as dicts, anything else as it is."""
        return self.data.rows() if isinstance(self.data, Columnar) else self.data

    def to_json(self) -> object:
        """The JSON: the rows, or the object."""
        return self._json

    def to_text(self) -> str:
        """The title, the table of `columns` (one line per row, fitted to the terminal: the
        `optional` ones left out first, `text.format_table`), the footer, the details."""
        rows = self._text_rows()
        keys = [c.key for c in self.columns]
        table = (
            format_table(
                [c.header for c in self.columns],
                [[row[k] for k in keys] for row in rows],
                drop=[keys.index(k) for k in self.optional if k in keys],
            )
            if rows or not self.empty
            else self.empty
        )
        parts = [self.title, table, self.footer, *(d.to_text() for d in self.details)]
        return "\n".join(part for part in parts if part)

    def _text_rows(self) -> Sequence[dict]:
        """The rows the text shows: `text_rows` (built, if columnar), else the JSON's."""
        shown = self.text_rows
        if shown is None:
            return _rows_of(self._json)
        return shown.rows() if isinstance(shown, Columnar) else shown

    def to_frame(self) -> pandas.DataFrame:
        """One row per JSON row, scalar cells (`frame`); model columns taken as columns (no
        per-row dicts) unless a cell holds objects, which only the row rule names."""
        values = self.data.values if isinstance(self.data, Columnar) else None
        if values is not None and not any(map(_holds_objects, values.values())):
            import pandas

            return pandas.DataFrame({k: _scalar_column(v) for k, v in values.items()})
        return frame(self._json, expand=self.expand)

    def to_csv(self) -> str:
        """The JSON's rows as CSV (`csv_text`)."""
        return csv_text(self._json, expand=self.expand)

    def to_columns(self) -> dict[str, Sequence[object]]:
        """The rows as columns (`columns_of_rows`); columnar rows as they are, no dicts built."""
        if isinstance(self.data, Columnar):
            return dict(self.data.values)
        return columns_of_rows(_rows_of(self._json))

    def _repr_html_(self) -> str:
        """Jupyter shows the DataFrame."""
        return frame_html(self.to_frame())

    def __str__(self) -> str:
        """`print(result)` shows what the CLI prints."""
        return self.to_text()


@dataclass(frozen=True)
class Report:
    """A result whose text for people is a short report rather than one table (`text`, or a
    function that writes it when it is printed, so that its tables fit the terminal of that
    moment); its JSON, CSV and DataFrame are those of `data`, as for a `Table`. `source` is the
    model's own result behind it, for a plot of it (`with_plot`); `confirms`: the text only
    says which files were written (the CLI's `--quiet` leaves it out)."""

    data: object
    text: str | Callable[[], str]
    source: object = None
    confirms: bool = False  # the text only says what was written: `--quiet` prints none of it

    def with_plot(self, path: object) -> Report:
        """The same result naming the plot drawn of it (`plot` in the JSON, a last line of the
        text)."""
        if not isinstance(self.data, Mapping):
            raise TypeError(f"a plot is named in a JSON object, not in {type(self.data).__name__}")
        data = {**self.data, "plot": str(path)}
        return replace(self, data=data, text=lambda: f"{self.to_text()}\nplot: {path}")

    def source_as(self, kind: type[T]) -> T:
        """The model's result behind this one (`source`), checked to be the `kind` that the
        function that made it returns (what a plot of it takes)."""
        if not isinstance(self.source, kind):
            raise TypeError(f"{type(self.source).__name__} is not a {kind.__name__}")
        return self.source

    def to_json(self) -> object:
        """The JSON."""
        return self.data

    def to_text(self) -> str:
        """The report."""
        return self.text() if callable(self.text) else self.text

    def to_frame(self) -> pandas.DataFrame:
        """The JSON's rows as a DataFrame (`frame`)."""
        return frame(self.data)

    def to_csv(self) -> str:
        """The JSON's rows as CSV (`csv_text`)."""
        return csv_text(self.data)

    def to_columns(self) -> dict[str, Sequence[object]]:
        """The JSON's rows (the object is one) as columns (`columns_of_rows`)."""
        return columns_of_rows(_rows_of(self.data))

    def _repr_html_(self) -> str:
        """Jupyter shows the DataFrame."""
        return frame_html(self.to_frame())

    def __str__(self) -> str:
        """`print(result)` shows what the CLI prints."""
        return self.to_text()


def frame_html(table: pandas.DataFrame) -> str:
    """The HTML Jupyter shows for a DataFrame (what every result's `_repr_html_` returns)."""
    html: str = table._repr_html_()  # type: ignore[operator]  # pandas-stubs read it as a column
    return html


def _holds_objects(values: Sequence[object]) -> bool:
    """Whether a model column has an object (or a list of them) in a cell."""
    return isinstance(values, list | tuple) and any(
        isinstance(v, dict) or _is_rows(v) for v in values
    )


def _scalar_column(values: Sequence[object]) -> Sequence[object]:
    """A model column as `frame` has it: a list in a cell as its joined text (`_cell`), every
    value as text where numbers and names mix; numpy arrays (scalars) as they are."""
    if not isinstance(values, list | tuple):
        return values
    cells = [_cell(v, False) if isinstance(v, list) else v for v in values]
    return _as_text(cells) if _mixes_numbers_and_text(cells) else cells


def frame(payload: object, *, expand: bool = True) -> pandas.DataFrame:
    """A JSON payload's rows (`json_rows`) as a tidy DataFrame: scalar cells, None as missing,
    a column that mixes numbers and names (a size of 64 or "imix") as text."""
    import pandas

    rows = json_rows(payload, for_csv=False, expand=expand)
    table = pandas.DataFrame(rows)
    for name in table.columns:
        if _mixes_numbers_and_text(table[name]):
            table[name] = _as_text(table[name])
    return table


def _as_text(column: Iterable[object]) -> list[str | None]:
    """Every value of a column as text (None stays missing)."""
    return [None if v is None else str(v) for v in column]


def _mixes_numbers_and_text(column: Iterable[object]) -> bool:
    """Whether a column holds both text and numbers (its non-missing values)."""
    kinds = {isinstance(v, str) for v in column if v is not None}
    return len(kinds) == 2


# --- rows, CSV and text tables ------------------------------------------------------------------


def json_rows(payload: object, *, for_csv: bool = True, expand: bool = True) -> list[dict]:
    """The rows a JSON payload holds, each flattened (`_flat`): a list is one row per item;
    an object holding a list of objects is, with `expand`, one row per item of that list (its
    fields named as they are, or under the list's name where the object's other fields, which
    are repeated on each row as context, have one of their names); any other object is one
    row."""
    if isinstance(payload, list):
        return [_flat(item, "", for_csv) for item in payload]
    if isinstance(payload, dict) and expand:
        lists = [k for k, v in payload.items() if _is_rows(v)]
        if len(lists) == 1:
            context = _flat({k: v for k, v in payload.items() if k != lists[0]}, "", for_csv)
            items = [_flat(item, "", for_csv) for item in payload[lists[0]]]
            if any(context.keys() & item.keys() for item in items):  # a name twice: the list's
                items = [
                    _flat(item, f"{column_name(lists[0])}_", for_csv) for item in payload[lists[0]]
                ]
            return [context | item for item in items]
    return [_flat(payload, "", for_csv)]


def _is_rows(value: object) -> bool:
    """Whether a JSON value is a non-empty list of objects (a table's rows)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _flat(value: object, prefix: str, for_csv: bool) -> dict:
    """A JSON value as one row of scalar cells, named in snake_case (`column_name`): a nested
    object's fields as `a_b` columns; a list of objects as one group of columns per item,
    `a_<item>_b`, the item named by its `_item_names`; any other list as one text cell."""
    if not isinstance(value, dict):
        return {prefix.rstrip("_") or "value": _cell(value, for_csv)}
    row: dict = {}
    for key, item in value.items():
        name = f"{prefix}{column_name(str(key))}"
        if isinstance(item, dict) and item:
            row |= _flat(item, f"{name}_", for_csv)
        elif _is_rows(item):
            key, labels = _item_names(item)
            for label, part in zip(labels, item, strict=True):
                fields = {k: v for k, v in part.items() if k != key}
                row |= _flat(fields, f"{name}_{label}_", for_csv)
        else:
            row[name] = _cell(item, for_csv)
    return row


ITEM_KEYS = ("name", "term", "metric", "parameter", "knob", "window", "test")
"""Fields that name an item of a list of objects (a term, a metric), tried in this order."""


def _item_names(items: list[dict]) -> tuple[str | None, list[str]]:
    """What names each item of a list of objects in a column's name: its `ITEM_KEYS` field
    (which is then left out of its columns) where the items' values there are distinct
    texts, else its place (0, 1, ...)."""
    for key in ITEM_KEYS:
        names = [v for item in items if isinstance(v := item.get(key), str) and v]
        if len(names) == len(items) and len(set(names)) == len(names):
            return key, [column_name(v) for v in names]
    return None, [str(i) for i in range(len(items))]


_SYMBOLS = (("<=", "_le_"), (">=", "_ge_"), ("<", "_lt_"), (">", "_gt_"), ("%", "_pct_"))


def column_name(key: str) -> str:
    """A JSON key or an item's name as a snake_case column name: lower case, "<"/">" as
    lt/gt, a range "65-127" as 65_to_127, any other run of non-alphanumerics as one "_"."""
    name = key.lower()
    for symbol, word in _SYMBOLS:
        name = name.replace(symbol, word)
    name = re.sub(r"^(\d+)-(\d+)$", r"\1_to_\2", name)
    return re.sub(r"[^a-z0-9]+", "_", name).strip("_") or "value"


def _cell(value: object, for_csv: bool) -> object:
    """A scalar cell: scalars as they are (numpy ones and datetimes as in the JSON); a list of
    scalars as one text, its items joined by "; "; for CSV, None as empty."""
    if for_csv and value is None:
        return ""
    if isinstance(value, dict):  # only an empty one is left as a cell
        return "" if for_csv else None
    if isinstance(value, list):
        return LIST_SEPARATOR.join(_text(v) for v in value)
    if value is None or isinstance(value, str | int | float):
        return value
    return json_default(value)


LIST_SEPARATOR = "; "  # between the items of a list held in one cell (`limited_by`, `notes`)


def _text(value: object) -> str:
    """One item of a listed cell as text: a number or a name as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=json_default)


def csv_text(payload: object, *, expand: bool = True) -> str:
    """The JSON's rows as CSV: one header line (the JSON's keys, whose names carry the units,
    `a_b` for nested ones, in first-seen order), then one line per row."""
    import csv
    import io

    rows = json_rows(payload, expand=expand)
    if not rows:  # no rows, so no columns to name: nothing at all
        return ""
    header = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def is_numpy_scalar(value: object, kind: str = "generic") -> bool:
    """Whether `value` is a numpy scalar of `kind` (asked without loading numpy: a numpy value
    exists only where numpy was loaded)."""
    numpy = sys.modules.get("numpy") if type(value).__module__ == "numpy" else None
    return numpy is not None and isinstance(value, getattr(numpy, kind))


def finite_or_none(value: float) -> float | None:
    """A figure for JSON, which has no NaN or infinity: None (null) where it is no figure (not
    measured, no bound, one group)."""
    return value if math.isfinite(value) else None


def json_default(value: object) -> object:
    """JSON for what `json` cannot encode itself: numpy scalars and datetimes."""
    if is_numpy_scalar(value):
        return value.item()  # type: ignore[attr-defined]  # a numpy scalar, by the check above
    datetime = sys.modules.get("datetime")  # a datetime exists only where it was imported
    if datetime is not None and isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")
