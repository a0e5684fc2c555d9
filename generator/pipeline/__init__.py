"""The build pipeline: report.yaml → inputs read → analyses → rendered pages → MkDocs sites."""
