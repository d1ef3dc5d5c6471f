"""The ``bedrock`` provider: any model on Amazon Bedrock through the Converse API (boto3).
``spec`` is its registry entry; ``api`` its data (tables, prices, stop reasons); ``body`` the
request; ``call`` and ``stream`` one call and one stream; ``sdk`` boto3 and the classifier;
``client`` the adapter. Claude on Bedrock through the Messages API stays the ``anthropic``
provider's (``options.platform: bedrock``)."""
