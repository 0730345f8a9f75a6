"""The report kit every report is built from.

- :mod:`~gpusre.reports.kit.section`: ``Section`` (what one section shows), ``Table`` / ``Column`` /
  ``Cell``, ``Chart``, ``SectionSpec`` (key, title, ``build(con, ctx)``) and ``build_sections``;
- :mod:`~gpusre.reports.kit.warehouse`: reading marts (``query_rows``, ``scalar``, ``table_status``);
- :mod:`~gpusre.reports.kit.formatting`: numbers, percentages, dates and the one duration formatter
  (``fmt_span`` / ``span_hours``);
- :mod:`~gpusre.reports.kit.labels`: state, bucket, component and action labels;
- :mod:`~gpusre.reports.kit.charts`: server-side SVG charts;
- :mod:`~gpusre.reports.kit.render`: the Jinja2 environments and ``write_report``; the templates
  ``base.html.j2`` / ``base.md.j2`` in ``reports/templates`` hold every macro once.
"""
