# The read-only setup cell every notebook starts with (the build puts it there,
# followed by the notebook's own lines). Answer cells get exactly these names
# wherever they run: mhsa_helpers.answers.answer_namespace.

